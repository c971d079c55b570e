"""``--encoder=sentencepiece``: the SentencePiece library, with or without the word cache.

With ``word_cache`` (the pipeline's choice) it is ``tokenizer.encoder.CachedEncoder``: exact
ids, faster than plain ``processor.encode``, but much of its work is Python, under the GIL,
which is why the pipeline runs it in a pool of processes. Without the word cache it is plain
``processor.encode``: the reference the exactness guard and ``roundtrip --check_ids`` compare
with (its batch call runs SentencePiece's own threads without the GIL).
"""

from __future__ import annotations

import importlib.metadata

import numpy as np
import sentencepiece as spm

from tokenizer.backends.base import EncoderBackend
from tokenizer.boundaries import cut_at_spaces
from tokenizer.id_store import TOKEN_DTYPE

NAME = "sentencepiece"


class SentencePieceBackend(EncoderBackend):
    """Not thread-safe with ``word_cache`` (the cache); thread-safe without."""

    name = NAME
    version = importlib.metadata.version("sentencepiece")

    def __init__(self, *, model_proto: bytes, processor: spm.SentencePieceProcessor | None = None,
                 num_threads: int = 1, word_cache: bool = True, cut_bytes: int = 0,
                 gil_free: bool = False):
        """Args:
          model_proto: A serialized SentencePiece model.
          processor: The model's processor, when the caller already has one.
          num_threads: SentencePiece threads per batch; 0 = every core this process may use.
          word_cache: Encode through ``CachedEncoder`` (same ids, faster on natural text).
          cut_bytes: Without the word cache, encode a text longer than this in pieces cut at
            space-word boundaries (``tokenizer.boundaries.cut_at_spaces``): the same ids,
            since no piece spans such a boundary, and far faster on long documents (the
            library's BPE slows down with the input's length); 0 = never, and never for a
            model whose pieces could span one (``tokenizer.encoder.plan_fast_path``).
          gil_free: No effect: this backend has one way to encode (``releases_gil`` says
            whether it holds the GIL).
        """
        from tokenizer.encoder import CachedEncoder, processor_from_bytes, usable_cores

        self._cached = None
        if word_cache:
            self._cached = CachedEncoder(model_proto=model_proto, num_threads=num_threads)
            processor = self._cached.processor
        super().__init__(processor=processor or processor_from_bytes(model_proto))
        self._threads = num_threads or usable_cores()
        self.releases_gil = not word_cache
        self._cut_bytes = 0
        if cut_bytes and not word_cache:
            from tokenizer.encoder import plan_fast_path

            rules, _ = plan_fast_path(self._processor, model_proto)
            self._cut_bytes = cut_bytes if rules is not None else 0

    @property
    def fallback_reason(self) -> str:
        """Why the word cache is off for this model ('' when it is on or was not asked for)."""
        return self._cached.fallback_reason if self._cached is not None else ""

    def _encode_plain(self, texts: list[str]) -> list[np.ndarray]:
        if self._cached is not None:
            return self._cached.encode_batch(texts)
        if self._cut_bytes and any(len(text) > self._cut_bytes // 4 for text in texts):
            return self._encode_cut(texts)
        encoded = self._processor.encode(texts, num_threads=self._threads, out_type="numpy")
        return [ids.astype(TOKEN_DTYPE, copy=False) for ids in encoded]

    def _encode_cut(self, texts: list[str]) -> list[np.ndarray]:
        pieces = [cut_at_spaces(text, max_bytes=self._cut_bytes) for text in texts]
        flat = [piece for parts in pieces for piece in parts]
        encoded = iter(self._processor.encode(flat, num_threads=self._threads, out_type="numpy"))
        out = []
        for parts in pieces:
            ids = [next(encoded) for _ in parts]
            out.append(np.concatenate(ids).astype(TOKEN_DTYPE, copy=False) if ids
                       else np.zeros(0, TOKEN_DTYPE))
        return out
