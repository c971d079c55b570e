"""A corpus with near-duplicates planted at known Jaccard similarity, and the truth.

Base documents are English-like: 300-800 words drawn from a synthetic vocabulary with Zipf
frequencies, in paragraphs, so two unrelated documents share almost no 5-word shingle
(Jaccard near 0). A share of them gets one copy, changed by one of

* ``substitute``: words replaced by random ones;
* ``swap``: adjacent words swapped;
* ``boilerplate``: a block of fixed text inserted between paragraphs;
* ``truncate``: the end cut off;
* ``reorder``: paragraphs shuffled, then a few words replaced;

each with a strength aimed at a similarity drawn from ``0.5 .. 0.99``. The truth records the
similarity the copy really has: the exact Jaccard of the two documents' shingle sets
(``pipeline.quality.minhash.shingle_set``). Documents are shuffled over the files, so a copy
may come before its source. Everything follows from ``seed``.
"""

from __future__ import annotations

import dataclasses
import itertools
import pathlib
import random

from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline.quality import minhash

TRANSFORMS = ("substitute", "swap", "boilerplate", "truncate", "reorder")
_SYLLABLES = ("ka", "lo", "mi", "ten", "ra", "vo", "shi", "an", "del", "po", "ru", "es",
              "tor", "ne", "bi", "qua", "li", "mon", "ga", "zu")
_BOILERPLATE_WORDS = 400


@dataclasses.dataclass(frozen=True)
class Planted:
    """One planted pair: documents are (file index, line), lines from 1."""

    source: tuple[int, int]
    copy: tuple[int, int]
    jaccard: float
    transform: str


@dataclasses.dataclass(frozen=True)
class Corpus:
    paths: tuple[str, ...]
    documents: int
    planted: tuple[Planted, ...]

    def max_similarity(self) -> dict[tuple[int, int], float]:
        """(file, line) -> the highest planted Jaccard it has to another document (0.0 for
        a document in no pair: unrelated documents share next to no shingle)."""
        best: dict[tuple[int, int], float] = {}
        for pair in self.planted:
            for doc in (pair.source, pair.copy):
                best[doc] = max(best.get(doc, 0.0), pair.jaccard)
        return best


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words)


class Words:
    """Words drawn with Zipf frequencies from a synthetic vocabulary."""

    def __init__(self, rng: random.Random, *, vocabulary: int = 20000, exponent: float = 1.0):
        self._rng = rng
        self._vocabulary = _vocabulary(rng, vocabulary)
        self._cumulative = list(itertools.accumulate(
            1.0 / (rank + 1) ** exponent for rank in range(vocabulary)))

    def draw(self, n: int) -> list[str]:
        return self._rng.choices(self._vocabulary, cum_weights=self._cumulative, k=n)


def split_paragraphs(rng: random.Random, words: list[str]) -> list[list[str]]:
    out, at = [], 0
    while at < len(words):
        size = rng.randint(40, 120)
        out.append(words[at:at + size])
        at += size
    return out


def join_paragraphs(paragraphs: list[list[str]]) -> str:
    return "\n\n".join(" ".join(p) for p in paragraphs)


def _copy(rng: random.Random, words: Words, base: list[list[str]], *, transform: str,
          target: float, boilerplate: list[str]) -> list[list[str]]:
    flat = [w for p in base for w in p]
    n = len(flat)
    sparse = max(1, round(n * (1 - target) / (5 * (1 + target))))  # each edit costs ~5 shingles
    paragraphs = [list(p) for p in base]
    if transform in ("substitute", "swap", "reorder"):
        if transform == "reorder":
            rng.shuffle(paragraphs)
            sparse = max(1, sparse - 4 * len(paragraphs) // 5)
        cells = [(i, j) for i, p in enumerate(paragraphs) for j in range(len(p))]
        for i, j in rng.sample(cells, min(sparse, len(cells))):
            p = paragraphs[i]
            if transform == "swap" and j + 1 < len(p):
                p[j], p[j + 1] = p[j + 1], p[j]
            else:
                p[j] = words.draw(1)[0]
    elif transform == "boilerplate":
        length = max(5, min(len(boilerplate), round(n * (1 - target) / target)))
        paragraphs.insert(rng.randint(0, len(paragraphs)), boilerplate[:length])
    elif transform == "truncate":
        keep = max(5, round(n * target))
        flat = flat[:keep]
        paragraphs = split_paragraphs(rng, flat)
    else:
        raise ValueError(f"unknown transform {transform!r}; one of {TRANSFORMS}")
    return paragraphs


def generate(*, seed: int, documents: int, copy_share: float = 0.3,
             shingle_words: int = 5, low: float = 0.5, high: float = 0.99):
    """(texts in file order, [(source index, copy index, jaccard, transform)]) with about
    ``documents`` texts, ``copy_share`` of them copies."""
    rng = random.Random(seed)
    words = Words(rng)
    boilerplate = words.draw(_BOILERPLATE_WORDS)
    copies = round(documents * copy_share)
    bases = [split_paragraphs(rng, words.draw(rng.randint(300, 800)))
             for _ in range(documents - copies)]
    texts = [join_paragraphs(b) for b in bases]
    pairs = []
    for source in rng.sample(range(len(bases)), copies):
        transform = rng.choice(TRANSFORMS)
        copy = join_paragraphs(_copy(rng, words, bases[source], transform=transform,
                           target=rng.uniform(low, high), boilerplate=boilerplate))
        similarity = minhash.jaccard(
            minhash.shingle_set(texts[source], shingle_words=shingle_words),
            minhash.shingle_set(copy, shingle_words=shingle_words))
        texts.append(copy)
        pairs.append((source, len(texts) - 1, similarity, transform))
    return texts, pairs


def write_corpus(directory, *, seed: int, documents: int, files: int = 4,
                 copy_share: float = 0.3, subset: str = "Pile-CC") -> Corpus:
    """Write ``documents`` shuffled over ``files`` Pile files ``NN.jsonl.zst`` in
    ``directory``; return their paths and the planted pairs by (file, line)."""
    texts, pairs = generate(seed=seed, documents=documents, copy_share=copy_share)
    order = list(range(len(texts)))
    random.Random(seed + 1).shuffle(order)
    where = {}
    per_file = [order[f::files] for f in range(files)]
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for f, indices in enumerate(per_file):
        for line, index in enumerate(indices, start=1):
            where[index] = (f, line)
        path = directory / f"{f:02d}.jsonl.zst"
        write_jsonl_zst(path, [pile_doc(texts[i], subset) for i in indices])
        paths.append(str(path))
    planted = tuple(Planted(source=where[s], copy=where[c], jaccard=j, transform=t)
                    for s, c, j, t in pairs)
    return Corpus(paths=tuple(paths), documents=len(texts), planted=planted)
