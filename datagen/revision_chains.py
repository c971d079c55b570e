"""A corpus of revision chains: one text edited again and again, each revision the previous
one with a few words replaced, plus many verbatim copies of one licence and unrelated texts.

With ``replaced=2`` words of a ~300-word text, consecutive revisions share all but ~10 of
~300 5-word shingles (Jaccard ~0.93; ~0.88 two apart, ~0.82 three apart), while revisions far
apart share nothing: the chain is one near-duplicate cluster only through its links, the case
a star of candidates from a band group's lowest member cuts into pieces (at 20,000 revisions;
at 2,000 the star's short reach still happens to cover every link). With ``replaced=3``
(Jaccard ~0.91 to the next, ~0.83 two apart, ~0.76 three apart, under the 0.8 threshold) a
star cuts a chain of a few hundred revisions already. Texts are English-like prose from
``datagen.near_duplicates``' Zipf vocabulary; everything follows from ``seed``.
"""

from __future__ import annotations

import dataclasses
import pathlib
import random

from datagen.near_duplicates import Words, join_paragraphs, split_paragraphs
from datagen.pile_files import pile_doc, write_jsonl_zst


def revisions(*, seed: int, count: int, words: int = 300, replaced: int = 2) -> list[str]:
    """``count`` revisions of one ``words``-word text, each the previous with ``replaced``
    words (at random places) replaced by random ones, in revision order."""
    rng = random.Random(seed)
    vocabulary = Words(rng)
    current = vocabulary.draw(words)
    layout = [len(p) for p in split_paragraphs(rng, current)]
    out = []
    for _ in range(count):
        out.append(_laid_out(current, layout))
        current = list(current)
        for place in rng.sample(range(words), replaced):
            current[place] = vocabulary.draw(1)[0]
    return out


def _laid_out(flat: list[str], layout: list[int]) -> str:
    at, parts = 0, []
    for size in layout:
        parts.append(flat[at : at + size])
        at += size
    return join_paragraphs(parts)


def unrelated(*, seed: int, count: int) -> list[str]:
    """``count`` independent texts of 300-800 words (Jaccard near 0 to each other)."""
    rng = random.Random(seed)
    vocabulary = Words(rng)
    return [
        join_paragraphs(split_paragraphs(rng, vocabulary.draw(rng.randint(300, 800))))
        for _ in range(count)
    ]


@dataclasses.dataclass(frozen=True)
class ChainCorpus:
    """The written files; the chain's documents as (file, line), in revision order."""

    paths: tuple[str, ...]
    documents: int
    chain: tuple[tuple[int, int], ...]


def write_corpus(
    directory,
    *,
    seed: int,
    chain: int,
    copies: int,
    others: int,
    files: int = 4,
    replaced: int = 2,
    subset: str = "Pile-CC",
) -> ChainCorpus:
    """Write ``chain`` revisions (``replaced`` words each; in revision order, in contiguous
    blocks over the files, so (file, line) order is revision order), then ``copies`` copies
    of one licence and ``others`` unrelated texts, as Pile files ``NN.jsonl.zst`` in
    ``directory``."""
    texts = revisions(seed=seed, count=chain, replaced=replaced)
    licence, *rest = unrelated(seed=seed + 1, count=others + 1)
    texts += [licence] * copies + rest
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    per_file = -(-len(texts) // files)
    paths, where = [], []
    for f in range(files):
        block = texts[f * per_file : (f + 1) * per_file]
        path = directory / f"{f:02d}.jsonl.zst"
        write_jsonl_zst(path, [pile_doc(t, subset) for t in block])
        paths.append(str(path))
        where += [(f, line) for line in range(1, len(block) + 1)]
    return ChainCorpus(paths=tuple(paths), documents=len(texts), chain=tuple(where[:chain]))
