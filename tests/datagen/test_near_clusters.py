"""Tests for datagen/near_clusters.py: real-prose near-duplicate clusters and their truth."""

from __future__ import annotations

import itertools
import json
import random
import re

from datagen import near_clusters
from datagen.pile_files import read_zst
from pipeline.quality import minhash


def test_a_variant_replaces_that_many_words_and_keeps_the_whitespace():
    text = "The  quick brown fox\njumps over\tthe lazy dog.\n\nIt ran away."
    made = near_clusters.variant(random.Random(1), text, replaced=3)
    assert re.split(r"\S+", made) == re.split(r"\S+", text)  # the same gaps, in place
    before, after = text.split(), made.split()
    assert len(after) == len(before)
    assert sum(a != b for a, b in zip(before, after)) == 3
    assert set(after) <= set(before)  # words of the text itself


def test_the_prose_is_long_and_unrelated():
    topics = near_clusters.prose(min_words=200)
    assert len(topics) >= 30
    assert all(len(t.split()) >= 200 for t in topics)
    sets = [minhash.shingle_set(t, shingle_words=5) for t in topics]
    assert max(minhash.jaccard(a, b) for a, b in itertools.combinations(sets, 2)) < (
        near_clusters.MAX_UNRELATED)


def test_the_truth_names_where_each_cluster_and_clean_topic_was_written(tmp_path):
    truth = near_clusters.write_corpus(tmp_path, seed=2, clusters=3, sizes=(3, 5), files=2)
    texts = [[json.loads(line)["text"] for line in read_zst(path).splitlines()]
             for path in truth.paths]
    at = {(f, line): text for f, rows in enumerate(texts) for line, text in enumerate(rows, 1)}
    assert [len(c) for c in truth.clusters] == [3, 5, 3]
    assert len(at) == truth.documents == 11 + len(truth.clean)
    assert sorted(at) == sorted([*itertools.chain(*truth.clusters), *truth.clean])
    for members in truth.clusters:
        sets = [minhash.shingle_set(at[doc], shingle_words=5) for doc in members]
        pairs = [minhash.jaccard(a, b) for a, b in itertools.combinations(sets, 2)]
        assert truth.min_jaccard <= min(pairs) and max(pairs) < 1.0
    assert truth.min_jaccard >= 0.85
