"""The interface every encoder backend implements, and the lossless handling of U+2581.

SentencePiece escapes ``' '`` to U+2581 ``▁`` before its model sees a text, so a literal ``▁``
in a document is indistinguishable from a space and decodes as one. The *documented encoding*
(``EncoderBackend.encode_batch``) removes that one loss: each literal ``▁`` becomes its three
UTF-8 byte-fallback pieces ``<0xE2><0x96><0x81>`` (which SentencePiece decodes back to ``▁``)
and the text between two of them is encoded as usual::

    encode("a▁b") == encode("a") + [id("<0xE2>"), id("<0x96>"), id("<0x81>")] + encode("b")

Documents without ``▁`` (nearly all) get exactly ``SentencePieceProcessor.encode``'s ids. A
model without those byte pieces (no byte fallback) keeps SentencePiece's behaviour, and such
documents stay lossy (``lossless_space_symbol`` is False).
"""

from __future__ import annotations

import abc

import numpy as np
import sentencepiece as spm

from tokenizer.id_store import TOKEN_DTYPE
from tokenizer.spec import SPACE_SYMBOL

SPACE_SYMBOL_PIECES = tuple(f"<0x{byte:02X}>" for byte in SPACE_SYMBOL.encode("utf-8"))


class BackendUnavailable(Exception):
    """A backend cannot encode this model exactly (or is not installed); the message says why."""


def space_symbol_ids(processor: spm.SentencePieceProcessor) -> np.ndarray | None:
    """Ids of ``<0xE2> <0x96> <0x81>``, or None when the model has no such byte pieces."""
    ids = [processor.piece_to_id(piece) for piece in SPACE_SYMBOL_PIECES]
    if not all(processor.is_byte(i) for i in ids):
        return None
    return np.array(ids, dtype=TOKEN_DTYPE)


def documented_encode(processor: spm.SentencePieceProcessor, text: str) -> list[int]:
    """The documented encoding of one text, straight from the SentencePiece library (for tests
    and as the definition): ``processor.encode`` between literal ``▁``, byte pieces for each."""
    space_ids = space_symbol_ids(processor)
    if space_ids is None or SPACE_SYMBOL not in text:
        return processor.encode(text)
    ids: list[int] = []
    for k, segment in enumerate(text.split(SPACE_SYMBOL)):
        if k:
            ids += space_ids.tolist()
        ids += processor.encode(segment)
    return ids


class EncoderBackend(abc.ABC):
    """Encodes batches of documents with one SentencePiece model.

    Subclasses implement ``_encode_plain`` for texts without ``▁``, returning exactly
    ``processor.encode(text)``; ``encode_batch`` adds the lossless handling of ``▁``.

    Attributes:
      name: The ``--encoder`` value that selects this backend.
      version: Version of the library doing the work (for the manifest).
      releases_gil: Whether encoding runs without the GIL, so that Python threads encode in
        parallel with each other and with the rest of the pipeline.
      special_strings: Texts this backend handles by a rule of its own rather than by the
        model's pieces alone; the exactness guard checks every document holding one.
    """

    name: str = ""
    version: str = ""
    releases_gil: bool = False

    def __init__(self, *, processor: spm.SentencePieceProcessor):
        self._processor = processor
        self._space_ids = space_symbol_ids(processor)
        self.special_strings: tuple[str, ...] = (SPACE_SYMBOL,)

    @property
    def processor(self) -> spm.SentencePieceProcessor:
        return self._processor

    @property
    def lossless_space_symbol(self) -> bool:
        """Whether a literal ``▁`` is encoded as byte pieces (and so decodes back to itself)."""
        return self._space_ids is not None

    @abc.abstractmethod
    def _encode_plain(self, texts: list[str]) -> list[np.ndarray]:
        """``processor.encode(text)`` of each text (none of which holds ``▁``), as int32."""

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        """The documented encoding of each text (see the module docstring), as int32 arrays."""
        texts = list(texts)
        if self._space_ids is None:
            return self._encode_plain(texts)
        marked = [i for i, text in enumerate(texts) if SPACE_SYMBOL in text]
        if not marked:
            return self._encode_plain(texts)
        # Each marked text is replaced by its non-empty segments, encoded in the same batch.
        batch = [text for text in texts if SPACE_SYMBOL not in text]
        segments = [texts[i].split(SPACE_SYMBOL) for i in marked]
        first = len(batch)
        for parts in segments:
            batch.extend(part for part in parts if part)
        encoded = self._encode_plain(batch)
        out: list[np.ndarray | None] = [None] * len(texts)
        plain = iter(encoded[:first])
        pieces = iter(encoded[first:])
        marked_set = set(marked)
        for i in range(len(texts)):
            if i not in marked_set:
                out[i] = next(plain)
        for i, parts in zip(marked, segments):
            joined = []
            for k, part in enumerate(parts):
                if k:
                    joined.append(self._space_ids)
                if part:
                    joined.append(next(pieces))
            out[i] = np.concatenate(joined).astype(TOKEN_DTYPE, copy=False)
        return out
