"""Encoder backends behind one interface (``EncoderBackend``), chosen by ``--encoder``.

* ``sentencepiece``: the SentencePiece library with the word cache (``tokenizer.encoder``);
  encodes every model, and is the reference the others are compared with.
* ``gigatoken``: SentencePiece BPE in compiled Rust, several times faster, for the models it
  reproduces exactly (``tokenizer.backends.gigatoken_backend``).
* ``auto``: the fastest backend that supports the model, else ``sentencepiece``, with the
  reason (``open_backend``).

Every backend returns the documented encoding (``tokenizer.backends.base``): the ids of
``SentencePieceProcessor.encode``, except that a literal U+2581 becomes its three byte pieces.
"""

from __future__ import annotations

import dataclasses

import sentencepiece as spm

from common.errors import ConfigError
from tokenizer.backends.base import (
    BackendUnavailable,
    EncoderBackend,
    documented_encode,
    space_symbol_ids,
)
from tokenizer.backends.gigatoken_backend import GigatokenBackend
from tokenizer.backends.sentencepiece_backend import SentencePieceBackend

__all__ = ["AUTO", "BACKENDS", "ENCODER_CHOICES", "BackendUnavailable", "EncoderBackend",
           "GigatokenBackend", "Opened", "SentencePieceBackend", "documented_encode",
           "open_backend", "reference_backend", "space_symbol_ids"]

AUTO = "auto"
# Fastest first: ``auto`` takes the first that supports the model.
BACKENDS = {backend.name: backend for backend in (GigatokenBackend, SentencePieceBackend)}
ENCODER_CHOICES = (AUTO, *BACKENDS)


@dataclasses.dataclass(frozen=True)
class Opened:
    """The backend ``open_backend`` chose, and why the faster ones were passed over."""

    backend: EncoderBackend
    reason: str  # '' when the requested (or, for auto, the fastest) backend is in use


def open_backend(requested: str, *, model_proto: bytes, num_threads: int = 1,
                 processor: spm.SentencePieceProcessor | None = None,
                 gil_free: bool = False) -> Opened:
    """Build the backend ``--encoder=requested`` names for this model.

    Args:
      requested: ``auto`` or a name of ``BACKENDS``.
      model_proto: A serialized SentencePiece model.
      num_threads: Threads each batch may use; 0 = every core.
      processor: The model's processor, when the caller already has one.
      gil_free: The caller's other threads run Python while it encodes: a backend that can
        encode on the caller's thread without the GIL does (see ``GigatokenBackend``).

    Raises:
      ConfigError: ``requested`` is unknown, or names a backend that cannot encode the model.
    """
    if requested not in ENCODER_CHOICES:
        raise ConfigError(f"--encoder={requested!r} is not one of {', '.join(ENCODER_CHOICES)}")
    names = list(BACKENDS) if requested == AUTO else [requested]
    passed_over = []
    for name in names:
        try:
            backend = BACKENDS[name](model_proto=model_proto, num_threads=num_threads,
                                     processor=processor, gil_free=gil_free)
        except BackendUnavailable as err:
            if requested != AUTO:
                raise ConfigError(f"--encoder={name} cannot encode this model: {err}; use "
                                  "--encoder=auto or --encoder=sentencepiece") from None
            passed_over.append(f"{name}: {err}")
            continue
        return Opened(backend=backend, reason="; ".join(passed_over))
    raise AssertionError("the sentencepiece backend encodes every model")


# Long documents are encoded by the reference in pieces of about this size, cut where no piece
# can span (same ids): the dev corpus's documents over 300 kB take 2.5x less time than whole
# (BENCHMARKS.md).
REFERENCE_CUT_BYTES = 16384


def reference_backend(*, model_proto: bytes, num_threads: int = 1,
                      processor: spm.SentencePieceProcessor | None = None) -> EncoderBackend:
    """The SentencePiece library itself (plain ``processor.encode``, no word cache) through
    the documented encoding: what the guard and ``roundtrip --check_ids`` compare with. Long
    texts go through in pieces cut at space-word boundaries, where the model's pieces cannot
    span (checked on its vocabulary), so the ids are ``processor.encode``'s of the whole."""
    return SentencePieceBackend(model_proto=model_proto, processor=processor,
                                num_threads=num_threads, word_cache=False,
                                cut_bytes=REFERENCE_CUT_BYTES)
