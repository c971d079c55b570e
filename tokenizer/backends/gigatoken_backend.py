"""``--encoder=gigatoken``: SentencePiece BPE with byte fallback in compiled Rust (gigatoken).

gigatoken encodes batches of texts without the GIL from a HuggingFace-style BPE definition
(merges ranked by piece score, byte fallback). Its own converter from a SentencePiece
``.model`` makes the *control* pieces (``<s>``, ``</s>``, ``<pad>``) added tokens, matched when
they appear as plain text, which SentencePiece never does; this module builds the definition
itself (``tokenizer_json``) without them, and without any merge that would build a piece input
text can never match (control, unknown, byte). With that it reproduces
``SentencePieceProcessor.encode`` exactly on the models this project trains; what it cannot
prove exact it refuses (``unsupported_reason``), and ``GigatokenBackend`` compares itself with
SentencePiece on ``PROBES`` when it loads.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import itertools
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import sentencepiece as spm

from common.errors import ConfigError
from tokenizer.backends.base import BackendUnavailable, EncoderBackend
from tokenizer.id_store import TOKEN_DTYPE
from tokenizer.model_proto import read_model_facts, read_piece_types
from tokenizer.spec import SPACE_SYMBOL

NAME = "gigatoken"

# Texts on which the backend must equal SentencePiece before it is used (besides
# tokenizer.encoder.LOSSLESS_PROBES): control pieces' texts in code, byte-piece look-alikes,
# long runs, characters outside any vocabulary.
PROBES = (
    "</s>", "<s>", "<pad>", "<unk>", "x = '<s>' + y + '</s>'  # <pad>", "<0x41><0xE2>",
    "a" * 3000, " " * 300 + "x", "\t" * 64, "\r\n" * 8, "a\x00\x00b", "\U0010ffff\U000e0001",
    "if (a<b && c>d) { return s; }", "<|endoftext|>", "\ufeffBOM", "😀" * 20,
)


def unsupported_reason(model_proto: bytes, processor: spm.SentencePieceProcessor) -> str:
    """Why gigatoken cannot be trusted to encode this model exactly ('' when it can)."""
    facts = read_model_facts(model_proto)
    if facts.model_type != "bpe":
        return f"model_type is {facts.model_type}; gigatoken encodes BPE models only"
    if not facts.byte_fallback:
        return "byte_fallback is off; gigatoken needs byte fallback"
    if (facts.precompiled_charsmap_size or facts.add_dummy_prefix
            or facts.remove_extra_whitespaces or not facts.escape_whitespaces
            or facts.treat_whitespace_as_suffix):
        return (f"the normalizer rewrites text ({facts}); gigatoken is verified exact only for "
                "the options of tokenizer.spec")
    types = read_piece_types(model_proto)
    for kind in ("user-defined", "unused"):
        found = [processor.id_to_piece(i) for i, name in enumerate(types) if name == kind]
        if found:
            return (f"the model has {len(found)} {kind} piece(s) (e.g. {found[0]!r}), which "
                    "SentencePiece treats in ways gigatoken does not reproduce")
    scores = [processor.get_score(i) for i, name in enumerate(types)
              if name == "normal" and len(processor.id_to_piece(i)) > 1]
    if len(set(scores)) != len(scores):
        return "pieces share a score; SentencePiece and gigatoken break such ties differently"
    return ""


def tokenizer_json(processor: spm.SentencePieceProcessor) -> str:
    """The model as a HuggingFace-style BPE definition for gigatoken.

    What gigatoken's own converter (``gigatoken.Tokenizer.from_sentencepiece``) builds for the
    models ``unsupported_reason`` accepts, less its two departures from SentencePiece: control
    pieces are not added tokens (SentencePiece never matches them in text), and no merge
    builds a piece text cannot match (control, unknown, byte). Merges are ranked as there (and
    as in transformers' ``generate_merges``): by the merged piece's score, best first.
    """
    size = processor.get_piece_size()
    pieces = [processor.id_to_piece(i) for i in range(size)]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    matchable = [i for i in range(size) if not (processor.is_control(i) or processor.is_unknown(i)
                                                or processor.is_byte(i))]
    merges = []
    for i in matchable:
        merged = pieces[i]
        local = [(merged[:k], merged[k:]) for k in range(1, len(merged))
                 if merged[:k] in vocab and merged[k:] in vocab]
        if not local:
            continue
        if len(local) > 1:
            local.sort(key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))
        score = processor.get_score(i)
        merges += [(left, right, score) for left, right in local]
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)  # stable
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        # SentencePiece's only rewrite under tokenizer.spec's options: ' ' -> U+2581.
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE_SYMBOL}]},
        "pre_tokenizer": None, "post_processor": None, "decoder": None,
        "model": {
            "type": "BPE", "dropout": None, "unk_token": processor.id_to_piece(processor.unk_id()),
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
            "byte_fallback": True, "ignore_merges": False, "vocab": vocab,
            "merges": [(left, right) for left, right, _ in merges],
        },
    }, ensure_ascii=False)


# Bump when tokenizer_json or unsupported_reason change: cached conversions are keyed by it.
CONVERSION_VERSION = 1


def cache_directory() -> str:
    """Where converted models are kept: ``$PILEPACK_CACHE_DIR``, else ``~/.cache/pilepack``."""
    root = os.environ.get("PILEPACK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pilepack")
    return os.path.join(root, "gigatoken")


def _converted(model_proto: bytes, processor: spm.SentencePieceProcessor, *,
               version: str) -> tuple[str, str]:
    """(``unsupported_reason``, ``tokenizer_json``) of a model, from this machine's cache when
    an earlier load converted it (the conversion is ~0.4 s of Python per load; reading it back
    ~10 ms). The key is the model's sha256, gigatoken's version and ``CONVERSION_VERSION``; the
    loaded backend is still compared with SentencePiece on ``PROBES``, and the guard checks it
    while running. A cache that cannot be read or written is only a slower load."""
    key = hashlib.sha256(model_proto).hexdigest()
    path = os.path.join(cache_directory(), f"{key}-{version}-v{CONVERSION_VERSION}.json")
    try:
        with open(path, encoding="utf-8") as handle:
            cached = json.load(handle)
        return cached["reason"], cached["definition"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    reason = unsupported_reason(model_proto, processor)
    definition = "" if reason else tokenizer_json(processor)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}.{threading.get_ident()}.partial"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump({"reason": reason, "definition": definition}, handle)
        os.replace(partial, path)  # atomic: a reader never sees half a file
    except OSError:
        pass
    return reason, definition


# Characters the per-text call encodes between two drops of gigatoken's word cache, which
# otherwise grows with every new word (~70 bytes a word: 430 MB after 6 M distinct words).
# Real text fills it slowly (~0.75 bytes per character of new text on the dev corpus); text
# of nothing but new words, ~6.5 bytes per character: 32 Mi characters bound it near 220 MB.
# A drop costs a reload of the definition (~75 ms for 32,000 pieces) and a cold start.
CACHE_CHARS = 32 << 20


class GigatokenBackend(EncoderBackend):
    """Thread-safe: one instance may serve several threads at once.

    Attributes:
      cache_drops: Times the per-text call's word cache was dropped (``cache_chars``).
    """

    name = NAME
    releases_gil = True

    def __init__(self, *, model_proto: bytes, processor: spm.SentencePieceProcessor | None = None,
                 num_threads: int = 1, gil_free: bool = False, cache_chars: int = CACHE_CHARS):
        """Args:
          model_proto: A serialized SentencePiece model.
          processor: The model's processor, when the caller already has one.
          num_threads: Threads per batch (the batch is split by bytes); 0 = every core.
          gil_free: Encode on the caller's thread with gigatoken's batch call, which releases
            the GIL, for a caller whose other threads run Python meanwhile. Without it, the
            caller's thread encodes text by text: that holds the GIL but keeps gigatoken's word
            cache from call to call (2-3x less CPU on words seen before; the batch call starts
            each call cold). The backend's own threads (``num_threads`` > 1) always use the
            batch call.
          cache_chars: The per-text call's word cache is dropped (the definition reloaded)
            once it has encoded this many characters since the last drop, so that memory
            does not grow with the input (``CACHE_CHARS``).

        Raises:
          BackendUnavailable: gigatoken is not installed, or not exact for this model.
          ConfigError: ``cache_chars`` is not positive.
        """
        if cache_chars < 1:
            raise ConfigError(f"cache_chars={cache_chars} must be positive")
        from tokenizer.encoder import LOSSLESS_PROBES, processor_from_bytes, usable_cores

        super().__init__(processor=processor or processor_from_bytes(model_proto))
        try:
            from gigatoken.gigatoken_rs import load_hf_json
        except ImportError as err:
            raise BackendUnavailable(f"gigatoken is not installed ({err})") from None
        self.version = importlib.metadata.version("gigatoken")
        reason, definition = _converted(model_proto, self._processor, version=self.version)
        if reason:
            raise BackendUnavailable(reason)
        self._load = functools.partial(load_hf_json, definition)
        self._tokenizer = self._load()
        self._cache_chars = cache_chars
        self._cached_chars = 0  # encoded by the per-text call since the last drop
        self.cache_drops = 0
        # One per-text call at a time: it holds the GIL anyway, and a tokenizer's word cache
        # is mutated by it ("Already borrowed" if two threads met inside one).
        self._per_text = threading.Lock()
        self._threads = num_threads or usable_cores()
        self._gil_free = gil_free
        self._pool = ThreadPoolExecutor(self._threads) if self._threads > 1 else None
        # Control pieces' texts: gigatoken's own converter would match them in text, this
        # module's definition does not; the guard checks every document that holds one.
        sp = self._processor
        self.special_strings += tuple(sorted(
            sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_control(i)))
        probes = list(LOSSLESS_PROBES) + list(PROBES)
        # In this thread, not the pool's: a freshly loaded tokenizer's first calls made from
        # two threads at once can fail with "RuntimeError: Already borrowed" (seen once in
        # ~10 runs of a loaded test); once these probes have run, concurrent calls are safe.
        # Both ways of calling it: text by text, and the batch call.
        for batch in (False, True):
            for probe, ids in zip(probes, self._encode_slice(probes, batch=batch)):
                if ids.tolist() != self._processor.encode(probe):
                    raise BackendUnavailable(
                        f"gigatoken {self.version} differs from SentencePiece on {probe[:40]!r} "
                        "with this model")

    def _encode_plain(self, texts: list[str]) -> list[np.ndarray]:
        if self._pool is None or len(texts) < 2:
            return self._encode_slice(texts, batch=self._gil_free or self._pool is not None)
        slices = _balanced_slices(texts, self._threads)
        encode = functools.partial(self._encode_slice, batch=True)
        return [ids for part in self._pool.map(encode, slices) for ids in part]

    def _encode_slice(self, texts: list[str], *, batch: bool) -> list[np.ndarray]:
        # uint32 -> int32: ids < 2**31.
        if not batch or not texts:
            return self._encode_each(texts)
        # One batch call on this thread (parallel=False: never gigatoken's own thread pool, which
        # is unsafe after a fork), without the GIL: this thread and the others run at once
        # (BENCHMARKS.md). The awkward-array result is read through its offsets and flat ids;
        # each document's ids are a view of one int32 array.
        layout = self._tokenizer.encode_batch(texts, parallel=False).layout
        if not hasattr(layout, "offsets"):  # another layout in some gigatoken release
            return self._encode_each(texts)
        offsets = np.asarray(layout.offsets.data).tolist()
        flat = np.asarray(layout.content.data).astype(TOKEN_DTYPE)
        return [flat[a:b] for a, b in itertools.pairwise(offsets)]

    def _encode_each(self, texts: list[str]) -> list[np.ndarray]:
        """The per-text call, whose word cache persists from call to call, up to
        ``cache_chars`` characters."""
        out = []
        with self._per_text:
            for text in texts:
                if self._cached_chars >= self._cache_chars:
                    self._tokenizer = self._load()  # a fresh, empty word cache
                    self._cached_chars = 0
                    self.cache_drops += 1
                self._cached_chars += len(text)
                out.append(self._tokenizer.encode(text).astype(TOKEN_DTYPE))
        return out


def _balanced_slices(texts: list[str], parts: int) -> list[list[str]]:
    """``texts`` cut into at most ``parts`` consecutive runs of about equal length."""
    ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)))
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, parts) / parts, side="right")
    bounds = [0, *sorted(set(cuts.tolist())), len(texts)]
    return [texts[a:b] for a, b in itertools.pairwise(bounds) if b > a]
