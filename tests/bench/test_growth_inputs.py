"""The growth benchmark's inputs: distinct copies hold no exact or near duplicate, duplicated
copies are exact, chained input scales its counts."""

import itertools
import os
import random

import pytest

from bench.growth_inputs import (
    ChainBase,
    altered,
    base_documents,
    distinct_copy,
    read_records,
    vocabulary,
    write_input,
)
from datagen.sample.build import resolve_stdlib
from datagen.sample.sources import SOURCES
from pipeline.quality.doc_hash import doc_hash
from pipeline.quality.minhash import jaccard, shingle_set


@pytest.fixture(scope="module")
def prose() -> list[dict]:
    """Real prose: the first 30 help topics of the interpreter's ``pydoc_data``."""
    texts = [c.load() for c in SOURCES["StackExchange"](resolve_stdlib(None))]
    texts = [t for t in texts if t and len(t.split()) >= 50][:30]
    assert len(texts) == 30
    return [{"text": t, "meta": {"pile_set_name": "StackExchange"}} for t in texts]


def test_distinct_copies_hold_no_exact_or_near_duplicate(prose):
    words = vocabulary([r["text"] for r in prose])
    copies = [distinct_copy(prose, copy=c, seed=1, words=words) for c in range(3)]
    assert copies[0] == prose  # the base itself at 1x
    shingles = {
        (c, i): shingle_set(r["text"], shingle_words=5)
        for c, docs in enumerate(copies)
        for i, r in enumerate(docs)
    }
    worst = max(
        jaccard(shingles[a], shingles[b])
        for a, b in itertools.combinations(shingles, 2)
        if a[0] != b[0]
    )
    assert worst < 0.5, worst  # far below --near_dup_threshold's 0.8
    hashes = [doc_hash(r["text"]) for docs in copies for r in docs]
    assert len(set(hashes)) == len(hashes)


def test_a_copy_keeps_the_layout_and_two_words_in_three():
    text = "The Quick brown fox,\njumps over: the lazy dog 42 times.\n\n  Again!"
    out = altered(text, rng=random.Random(0), words=["alpha"])
    assert out == "Alpha Quick brown alpha,\njumps over: alpha lazy dog alpha times.\n\n  Again!"


def test_duplicated_copies_are_the_same_bytes_and_chained_counts_scale(prose, tmp_path):
    base = base_documents(prose, text_bytes=20_000)
    assert sum(len(r["text"].encode()) for r in base[:-1]) < 20_000
    assert sum(len(r["text"].encode()) for r in base) >= 20_000
    dup = write_input(str(tmp_path / "dup"), kind="duplicated", k=3, base=base)
    files = sorted(os.listdir(dup.directory))
    assert files == ["00.jsonl.zst", "01.jsonl.zst", "02.jsonl.zst"]
    first = (tmp_path / "dup" / files[0]).read_bytes()
    assert all((tmp_path / "dup" / f).read_bytes() == first for f in files)
    assert dup.documents == 3 * len(base)
    assert dup.text_bytes == 3 * sum(len(r["text"].encode()) for r in base)

    distinct = write_input(str(tmp_path / "distinct"), kind="distinct", k=2, base=base)
    records = read_records(
        [os.path.join(distinct.directory, f) for f in sorted(os.listdir(distinct.directory))]
    )
    assert records[: len(base)] == base and len(records) == 2 * len(base)
    assert distinct.text_bytes == sum(len(r["text"].encode()) for r in records)

    chain = ChainBase(chain=20, copies=5, others=3)
    chained = write_input(str(tmp_path / "chained"), kind="chained", k=2, base=base, chain=chain)
    assert chained.documents == 2 * (20 + 5 + 3)
    assert len(os.listdir(chained.directory)) == 2
