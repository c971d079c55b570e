"""A model's identity and the facts a dataset records about it (no Beam, no TensorFlow)."""

from __future__ import annotations

import dataclasses
import hashlib

from common.errors import PilepackError
from tokenizer.spec import MODEL_FILENAME


def fingerprint(model_bytes: bytes) -> str:
    """SHA-256 hex digest of a serialized model: the tokenizer's identity in manifests."""
    return hashlib.sha256(model_bytes).hexdigest()


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What the manifest's ``tokenizer`` block says about a model (``describe`` builds it)."""

    path: str
    sha256: str
    vocab_size: int
    pad_id: int
    eos_id: int
    unk_id: int
    bos_id: int
    lossless: bool
    trained: dict | None = None
    reused: bool = False  # trained by an earlier run whose model a rerun took over

    def manifest_entry(self) -> dict:
        return {
            "file": MODEL_FILENAME,
            "sha256": self.sha256,
            "vocab_size": self.vocab_size,
            "special_ids": {"pad": self.pad_id, "eos": self.eos_id, "unk": self.unk_id,
                            "bos": self.bos_id},
            "lossless": self.lossless,
            "trained": self.trained,
        }


class InvalidModelError(PilepackError, ValueError):
    """A file that is not a valid SentencePiece model (truncated, damaged, another format)."""


def parse_model(model: bytes, *, source: str):
    """A SentencePieceProcessor for ``model``; InvalidModelError naming ``source``, its size
    and sha256 when SentencePiece cannot parse it (instead of its raw ParseFromArray error)."""
    import sentencepiece as spm

    try:
        return spm.SentencePieceProcessor(model_proto=model)
    except (RuntimeError, OSError, TypeError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InvalidModelError(
            f"{source} is not a valid SentencePiece model ({len(model):,} bytes, sha256 "
            f"{fingerprint(model)}): {reason}; is it truncated or damaged? Copy it again or "
            "retrain it") from err


def describe(path: str, *, trained: dict | None = None,
             model: bytes | None = None) -> ModelInfo:
    """Facts about the model at ``path`` (``model``: its bytes, when already read)."""
    from tokenizer.encoder import check_lossless, load_model_bytes

    model = load_model_bytes(path) if model is None else model
    sp = parse_model(model, source=path)
    return ModelInfo(
        path=path, sha256=fingerprint(model), vocab_size=sp.get_piece_size(),
        pad_id=sp.pad_id(), eos_id=sp.eos_id(), unk_id=sp.unk_id(), bos_id=sp.bos_id(),
        lossless=check_lossless(sp), trained=trained,
    )
