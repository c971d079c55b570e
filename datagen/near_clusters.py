"""A corpus of real prose with near-duplicate clusters of 3 and more planted, and the truth.

The prose is the Python installation's own: the help topics behind ``help("if")``
(``datagen.sample.sources``, the built-in sample's StackExchange subset), each a few hundred to
a few thousand words of English about the language. Topics of ``min_words`` or more are kept
when their 5-word shingles share less than ``MAX_UNRELATED`` Jaccard with every topic kept
before them (a few topics repeat each other's paragraphs).

Each cluster is one topic and ``size - 1`` variants of it, each the topic with a few words
(at random places) replaced by other words of the same topic, so that every two members of a
cluster have Jaccard at least ``min_jaccard`` (measured exactly, or the variant is drawn again
lighter). The rest of the topics are clean: each planted once, unchanged. All documents are
shuffled over the files, so a variant may come before its topic. Everything follows from
``seed``.
"""

from __future__ import annotations

import dataclasses
import itertools
import pathlib
import random
import re
import sysconfig

from datagen.pile_files import pile_doc, write_jsonl_zst
from datagen.sample.sources import SOURCES
from pipeline.quality import minhash

MAX_UNRELATED = 0.1
SHINGLE_WORDS = 5
_WORD = re.compile(r"\S+")


@dataclasses.dataclass(frozen=True)
class ClusterCorpus:
    """The written files; each cluster's members and the clean documents as (file, line),
    lines from 1; the least Jaccard between two members of a cluster."""

    paths: tuple[str, ...]
    documents: int
    clusters: tuple[tuple[tuple[int, int], ...], ...]
    clean: tuple[tuple[int, int], ...]
    min_jaccard: float


def prose(*, min_words: int) -> list[str]:
    """The installation's help topics of ``min_words`` words or more, in key order, without
    those sharing ``MAX_UNRELATED`` Jaccard or more with one kept before them."""
    stdlib = sysconfig.get_paths()["stdlib"]
    kept: list[str] = []
    shingles: list[frozenset] = []
    for candidate in SOURCES["StackExchange"](stdlib):
        text = candidate.load()
        if not text or len(text.split()) < min_words:
            continue
        own = minhash.shingle_set(text, shingle_words=SHINGLE_WORDS)
        if all(minhash.jaccard(own, other) < MAX_UNRELATED for other in shingles):
            kept.append(text)
            shingles.append(own)
    return kept


def variant(rng: random.Random, text: str, *, replaced: int) -> str:
    """``text`` with ``replaced`` of its words (at random places) replaced by other words of
    it; the whitespace between words stays as it was."""
    spans = [match.span() for match in _WORD.finditer(text)]
    words = [text[start:end] for start, end in spans]
    new = dict.fromkeys(rng.sample(range(len(spans)), min(replaced, len(spans))))
    for place in new:
        new[place] = rng.choice([w for w in words if w != words[place]] or ["~"])
    out, at = [], 0
    for place, (start, end) in enumerate(spans):
        out += [text[at:start], new.get(place, words[place])]
        at = end
    return "".join(out) + text[at:]


def _cluster(rng: random.Random, text: str, *, size: int, min_jaccard: float) -> list[str]:
    """``text`` and ``size - 1`` variants, every two of them at ``min_jaccard`` or more."""
    words = len(text.split())
    # Each replaced word changes up to SHINGLE_WORDS shingles of the topic and of its other
    # variants: aim at half the distance to min_jaccard for each variant, lighter on a miss.
    replaced = max(1, round(words * (1 - min_jaccard) / (4 * SHINGLE_WORDS)))
    while True:
        members = [text] + [variant(rng, text, replaced=replaced) for _ in range(size - 1)]
        sets = [minhash.shingle_set(m, shingle_words=SHINGLE_WORDS) for m in members]
        least = min(minhash.jaccard(a, b) for a, b in itertools.combinations(sets, 2))
        if least >= min_jaccard or replaced == 1:
            return members
        replaced = max(1, replaced // 2)


def write_corpus(directory, *, seed: int, clusters: int, sizes=(3, 4, 5), files: int = 3,
                 min_words: int = 200, min_jaccard: float = 0.85,
                 subset: str = "Pile-CC") -> ClusterCorpus:
    """Plant ``clusters`` clusters (sizes cycling through ``sizes``) from the first topics of
    ``prose`` and every other topic once, shuffled over ``files`` Pile files
    ``NN.jsonl.zst`` in ``directory``."""
    rng = random.Random(seed)
    topics = prose(min_words=min_words)
    if len(topics) <= clusters:
        raise ValueError(f"{len(topics)} help topics of {min_words}+ words: too few for "
                         f"{clusters} clusters and clean documents; lower min_words")
    docs: list[tuple[str, int]] = []  # (text, cluster index or -1 when clean)
    least = 1.0
    for index, (topic, size) in enumerate(zip(topics, itertools.cycle(sizes))):
        if index >= clusters:
            docs.append((topic, -1))
            continue
        members = _cluster(rng, topic, size=size, min_jaccard=min_jaccard)
        sets = [minhash.shingle_set(m, shingle_words=SHINGLE_WORDS) for m in members]
        least = min([least] + [minhash.jaccard(a, b) for a, b in itertools.combinations(sets, 2)])
        docs += [(member, index) for member in members]
    rng.shuffle(docs)
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    where: list[list[tuple[int, int]]] = [[] for _ in range(clusters + 1)]  # last: clean
    paths = []
    for f in range(files):
        block = docs[f::files]
        path = directory / f"{f:02d}.jsonl.zst"
        write_jsonl_zst(path, [pile_doc(text, subset) for text, _ in block])
        paths.append(str(path))
        for line, (_, cluster) in enumerate(block, start=1):
            where[cluster].append((f, line))
    return ClusterCorpus(paths=tuple(paths), documents=len(docs),
                         clusters=tuple(tuple(sorted(c)) for c in where[:clusters]),
                         clean=tuple(sorted(where[-1])), min_jaccard=least)
