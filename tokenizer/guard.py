"""The exactness guard: a fast backend's ids are checked against SentencePiece while it runs.

``ChunkEncoder`` is what the pipeline holds (in ``pipeline.tokenize.stage`` or in each encoder
process): the backend ``--encoder`` chose plus the guard. For every chunk it also encodes with
the SentencePiece library (plain ``processor.encode``, through the same documented encoding)

* a deterministic sample of documents: those whose hash of (file, line) falls in 1 of
  ``check_every`` buckets (the same documents on every run, whatever the bundling), and
* every document holding a string the backend treats by a rule of its own
  (``EncoderBackend.special_strings``: U+2581, the control pieces' texts),

and compares. On a difference ``on_mismatch="fail"`` raises ``EncoderMismatchError`` naming the
document's file and line; ``"fallback"`` re-encodes the whole chunk with the sentencepiece
backend and counts it. The sentencepiece backend is the reference itself, so it is not checked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading

import numpy as np

from common.errors import DataError
from tokenizer.backends import SentencePieceBackend, open_backend, reference_backend

ON_MISMATCH = ("fail", "fallback")


class EncoderMismatchError(DataError):
    """A backend's ids differ from SentencePiece's on a document (named by file and line)."""


@dataclasses.dataclass
class EncodeStats:
    """What one chunk's encoding did (summed into the manifest's ``encoder`` record)."""

    backend: str
    version: str
    reason: str = ""  # why ``auto`` passed over faster backends
    documents: int = 0
    checked_documents: int = 0  # also encoded by SentencePiece and compared
    mismatches: int = 0
    fallback_chunks: int = 0  # re-encoded with sentencepiece after a mismatch
    space_symbol_documents: int = 0  # held U+2581 (encoded as its byte pieces)

    COUNTS = ("documents", "checked_documents", "mismatches", "fallback_chunks",
              "space_symbol_documents")

    def merge(self, other: EncodeStats) -> None:
        """Add ``other``'s counts (another chunk's, same backend) to these."""
        for field in self.COUNTS:
            setattr(self, field, getattr(self, field) + getattr(other, field))


def sampled(path: str, line: int, check_every: int) -> bool:
    """Whether the document at ``path`` line ``line`` is in the guard's 1-in-``check_every``
    sample (0: none). Keyed by the file's name, not its directory or scheme, so the same input
    checked from local disk or from S3 samples the same documents (same manifest)."""
    if check_every <= 0:
        return False
    name = path.rstrip("/").rsplit("/", 1)[-1]
    digest = hashlib.blake2b(f"{name}\n{line}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % check_every == 0


class _SpecialFinder:
    """Whether a text holds any of some strings: one substring search per distinct first
    character, and none at all for a non-ASCII first character in an ASCII text."""

    def __init__(self, strings):
        self._by_first: dict[str, tuple[str, ...]] = {}
        for string in sorted(set(strings)):
            self._by_first[string[0]] = self._by_first.get(string[0], ()) + (string,)

    def __call__(self, text: str) -> bool:
        ascii_text = text.isascii()
        for first, strings in self._by_first.items():
            if ascii_text and not first.isascii():
                continue
            if first in text and any(string in text for string in strings):
                return True
        return False


class ChunkEncoder:
    """A backend and its guard. Thread-safe when the backend is (``releases_gil``)."""

    def __init__(self, *, model_proto: bytes, encoder: str = "auto", num_threads: int = 1,
                 check_every: int = 64, on_mismatch: str = "fail", gil_free: bool = False):
        """Args:
          model_proto: A serialized SentencePiece model.
          encoder: ``--encoder``: auto, sentencepiece or gigatoken.
          num_threads: Threads per chunk; 0 = every core.
          check_every: Check 1 in this many documents (0: only those with special strings).
          on_mismatch: ``fail`` or ``fallback`` (see the module docstring).
          gil_free: Other threads of this process run Python while it encodes (see
            ``tokenizer.backends.open_backend``).
        """
        if on_mismatch not in ON_MISMATCH:
            raise ValueError(f"on_mismatch={on_mismatch!r} is not one of {ON_MISMATCH}")
        self._model_proto = model_proto
        self._num_threads = num_threads
        opened = open_backend(encoder, model_proto=model_proto, num_threads=num_threads,
                              gil_free=gil_free)
        self.backend, self.reason = opened.backend, opened.reason
        cache_off = getattr(self.backend, "fallback_reason", "")
        if cache_off:
            self.reason = "; ".join(filter(None, [self.reason, f"word cache off: {cache_off}"]))
        self._check_every = check_every
        self._on_mismatch = on_mismatch
        self._reference = None
        if self.backend.name != SentencePieceBackend.name:
            self._reference = reference_backend(model_proto=model_proto,
                                                processor=self.backend.processor)
        self._special = _SpecialFinder(self.backend.special_strings)
        self._fallback = None
        self._fallback_lock = threading.Lock()  # the word cache is not thread-safe

    def encode(self, texts: list[str], *, path: str, lines: list[int]):
        """(ids of each text, EncodeStats) for one chunk of ``path`` (``lines``: each text's).

        Raises:
          EncoderMismatchError: with ``on_mismatch="fail"``, naming the first document whose
            ids differ from SentencePiece's.
        """
        backend = self.backend
        stats = EncodeStats(backend=backend.name, version=backend.version, reason=self.reason,
                            documents=len(texts))
        special = [self._special(text) for text in texts]
        stats.space_symbol_documents = sum(
            special[i] and "\u2581" in text for i, text in enumerate(texts))
        ids = backend.encode_batch(texts)
        if self._reference is None:
            return ids, stats
        check = [i for i, line in enumerate(lines)
                 if special[i] or sampled(path, line, self._check_every)]
        stats.checked_documents = len(check)
        if not check:
            return ids, stats
        expected = self._reference.encode_batch([texts[i] for i in check])
        differ = [i for i, want in zip(check, expected) if not np.array_equal(ids[i], want)]
        stats.mismatches = len(differ)
        if not differ:
            return ids, stats
        if self._on_mismatch == "fail":
            raise EncoderMismatchError(self._describe(ids[differ[0]], expected[check.index(
                differ[0])], path=path, line=lines[differ[0]], more=len(differ) - 1))
        stats.fallback_chunks = 1
        with self._fallback_lock:
            if self._fallback is None:
                self._fallback = SentencePieceBackend(model_proto=self._model_proto,
                                                      num_threads=self._num_threads)
            return self._fallback.encode_batch(texts), stats

    def _describe(self, got: np.ndarray, want: np.ndarray, *, path: str, line: int,
                  more: int) -> str:
        common = min(len(got), len(want))
        unequal = np.flatnonzero(got[:common] != want[:common])
        first = int(unequal[0]) if len(unequal) else common
        return (f"{path} line {line}: the {self.backend.name} {self.backend.version} encoder's "
                f"ids differ from SentencePiece's from token {first} on ({len(got)} vs "
                f"{len(want)} tokens)" + (f"; {more} more document(s) of its chunk differ"
                                          if more else "")
                + ". Rerun with --encoder=sentencepiece, or with "
                "--on_encoder_mismatch=fallback to re-encode such chunks with sentencepiece "
                "(counted in the manifest)")
