"""The growth benchmark's inputs: a base of real documents scaled ``k`` times in three ways.

- **distinct**: copy 0 is the base; copy ``c`` is each base document with every third word
  (a run of ASCII letters and digits or non-ASCII characters, as ``pipeline.quality.minhash``
  splits words) replaced by a word drawn from the base's own words, weighted by frequency, and
  capitalized like the word it replaces. Every 5-word shingle holds a replaced word, so two
  copies share a shingle only where all their drawn words agree: Jaccard ~0 between copies
  (no exact or near duplicate arises), while the text keeps the corpus's layout, two words in
  three of its prose and its vocabulary (so tokenizing costs what new text does).
- **duplicated**: ``k`` copies of the base, byte for byte (every copy beyond the first an exact
  duplicate).
- **chained**: ``datagen.revision_chains`` with its chain, licence copies and unrelated texts
  each ``k`` times the base's counts (one near-duplicate cluster of ``k`` times the length).

Each kind is written as ``k`` Pile files (one per copy; the chained corpus over ``k`` files).
Everything follows from the base and ``seed``.
"""

from __future__ import annotations

import dataclasses
import os
import random
import re

from common.errors import ConfigError
from datagen.pile_files import write_jsonl_zst
from datagen.revision_chains import write_corpus

KINDS = ("distinct", "duplicated", "chained")
_WORD = re.compile(r"(?:[0-9A-Za-z]|[^\x00-\x7f])+")  # minhash's words (its separator bytes)
_DRAWN = re.compile(r"[A-Za-z]{2,15}")  # words a copy's replacements are drawn from
EVERY = 3  # replace words 0, 3, 6, ...: a 5-word shingle always holds one


@dataclasses.dataclass(frozen=True)
class ChainBase:
    """The chained input's counts at 1x (``datagen.revision_chains.write_corpus``)."""

    chain: int = 1000
    copies: int = 200
    others: int = 250


@dataclasses.dataclass(frozen=True)
class Written:
    """One input written: its files' directory, documents and bytes of text."""

    directory: str
    documents: int
    text_bytes: int


def base_documents(records: list[dict], *, text_bytes: int) -> list[dict]:
    """The first records whose texts add up to at least ``text_bytes`` UTF-8 bytes."""
    taken, total = [], 0
    for record in records:
        if total >= text_bytes:
            break
        taken.append(record)
        total += len(record["text"].encode("utf-8"))
    return taken


def vocabulary(texts: list[str]) -> list[str]:
    """Every lower-case word occurrence of ``texts`` (2-15 ASCII letters), with repeats, so a
    uniform draw from it follows the words' frequencies."""
    return [w.lower() for text in texts for w in _DRAWN.findall(text)]


def altered(text: str, *, rng: random.Random, words: list[str]) -> str:
    """``text`` with words 0, ``EVERY``, 2 * ``EVERY``, ... replaced by draws from ``words``
    (capitalized where the replaced word starts with a capital)."""
    seen = 0

    def swap(match: re.Match) -> str:
        nonlocal seen
        seen += 1
        if (seen - 1) % EVERY:
            return match.group(0)
        word = rng.choice(words)
        return word.capitalize() if match.group(0)[:1].isupper() else word

    return _WORD.sub(swap, text)


def distinct_copy(records: list[dict], *, copy: int, seed: int, words: list[str]) -> list[dict]:
    """Copy ``copy`` of ``records``: the records themselves for 0, else each text altered
    with its own generator (seeded by ``seed``, ``copy`` and the record's index)."""
    if copy == 0:
        return list(records)
    return [
        dict(r, text=altered(r["text"], rng=random.Random(f"{seed}-{copy}-{i}"), words=words))
        for i, r in enumerate(records)
    ]


def write_input(
    directory: str,
    *,
    kind: str,
    k: int,
    base: list[dict],
    seed: int = 1,
    chain: ChainBase = ChainBase(),
) -> Written:
    """Write input ``kind`` at ``k`` times the base as Pile files in ``directory``."""
    os.makedirs(directory)
    if kind == "chained":
        corpus = write_corpus(
            directory,
            seed=seed,
            chain=chain.chain * k,
            copies=chain.copies * k,
            others=chain.others * k,
            files=k,
        )
        return Written(directory, corpus.documents, _text_bytes(corpus.paths))
    if kind not in KINDS:
        raise ConfigError(
            f"--kinds: unknown input kind {kind!r}, expected one of {', '.join(KINDS)}"
        )
    words = vocabulary([r["text"] for r in base]) if kind == "distinct" else []
    documents = text_bytes = 0
    for copy in range(k):
        records = (
            distinct_copy(base, copy=copy, seed=seed, words=words) if kind == "distinct" else base
        )
        write_jsonl_zst(os.path.join(directory, f"{copy:02d}.jsonl.zst"), records)
        documents += len(records)
        text_bytes += sum(len(r["text"].encode("utf-8")) for r in records)
    return Written(directory, documents, text_bytes)


def read_records(paths: list[str]) -> list[dict]:
    """Every record of Pile ``.jsonl.zst`` files, in order."""
    import io
    import json

    import zstandard

    records = []
    for path in paths:
        with open(path, "rb") as handle:
            data = zstandard.ZstdDecompressor().stream_reader(handle).read()
        records += [json.loads(line) for line in io.BytesIO(data) if line.strip()]
    return records


def _text_bytes(paths) -> int:
    return sum(len(r["text"].encode("utf-8")) for r in read_records(list(paths)))
