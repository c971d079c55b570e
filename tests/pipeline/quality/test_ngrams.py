import random

import numpy as np
import pytest

from datagen.contamination import make_corpus
from pipeline.quality import decision_files, ngrams


def test_words_ignore_case_punctuation_and_whitespace_runs():
    assert ngrams.words("The  CAT,\n sat -- on (the) mat.") == ["the", "cat", "sat", "on", "the",
                                                                 "mat"]
    # NFC, Unicode punctuation (inside words too), symbols and digits kept.
    assert ngrams.words("Cafe\u0301\u00a0don't \u00bfQu\u00e9? $5 \u2014 x+y") == [
        "caf\u00e9", "dont", "qu\u00e9", "$5", "x+y"]


def test_word_spans_give_the_same_words_with_their_offsets():
    rng = random.Random(3)
    pieces = ["Word", "café", "Cafe\u0301", "--", "(x)", "İs", "ΟΔΟΣ.", "a_b", "42%", "—", "\u00bf"]
    gaps = [" ", "\n", "\t", "\u00a0", "\u2003", "  "]
    for _ in range(200):
        text = "".join(rng.choice(pieces) + rng.choice(gaps) for _ in range(rng.randint(0, 12)))
        found, spans = ngrams.word_spans(text)
        assert found == ngrams.words(text), text
        assert [ngrams.words(text[s:e]) for s, e in spans.tolist()] == [[w] for w in found]


def test_ngram_hashes_count_and_order():
    hashes = ngrams.word_hashes(["a", "b", "c", "d"])
    assert len(ngrams.ngram_hashes(hashes, 3)) == 2
    assert len(ngrams.ngram_hashes(hashes, 5)) == 0
    assert ngrams.ngram_hashes(hashes[:3], 3)[0] == ngrams.ngram_hashes(hashes, 3)[0]
    assert ngrams.ngram_hashes(hashes[[1, 0, 2]], 3)[0] != ngrams.ngram_hashes(hashes, 3)[0]
    assert (ngrams.word_hashes(["a", "b"], {}) == hashes[:2]).all()  # the cache: speed only


def test_covered_runs_and_cut():
    assert ngrams.covered_runs(np.array([0, 1, 5]), n=2, count=8).tolist() == [[0, 2], [5, 6]]
    assert ngrams.covered_runs(np.array([0, 2]), n=2, count=4).tolist() == [[0, 3]]  # adjacent
    assert ngrams.cut("keep this, drop THAT. keep", np.array([[11, 21]])) == "keep this,  keep"


def test_eval_set_merges_sets():
    one, two = np.array([5, 1, 9], np.uint64), np.array([9, 7], np.uint64)
    built = ngrams.EvalSet.build([(1, two), (0, one), (0, one)], n=3)
    assert built.hashes.tolist() == [1, 5, 7, 9]
    assert built.sets.tolist() == [1, 1, 2, 3]
    found, masks = built.find(np.array([9, 2, 1, 10], np.uint64))
    assert found.tolist() == [0, 2] and masks.tolist() == [3, 1]
    assert ngrams.EvalSet.build([], n=3).find(np.array([1], np.uint64))[0].tolist() == []


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(seed=7, documents=600, passages=60, planted=150, min_words=13,
                       short_passages=5)


@pytest.fixture(scope="module")
def eval_set(corpus):
    parts = [(0, ngrams.text_ngrams(text, 13)) for text in corpus.passages]
    return ngrams.EvalSet.build(parts, n=13)


def test_planted_passages_are_found_and_clean_documents_are_not(corpus, eval_set):
    planted = {plant.document for plant in corpus.plants}
    found = {i for i, text in enumerate(corpus.documents)
             if ngrams.match(text, eval_set, redact=False) is not None}
    assert len(planted) == 150
    assert len(found & planted) / len(planted) >= 0.99  # recall
    assert not found - planted  # no false drops on the clean documents


def test_redaction_cuts_exactly_the_planted_words(corpus, eval_set):
    cache: dict = {}
    for plant in corpus.plants:
        text = corpus.documents[plant.document]
        found = ngrams.match(text, eval_set, redact=True, cache=cache)
        assert found.text == corpus.redacted(plant.document)
        assert len(found.spans) == 1
        assert found.removed_chars == plant.span[1] - plant.span[0]
        assert found.ngrams == plant.words - 13 + 1


def test_short_passages_contribute_no_ngram(corpus):
    shorts = corpus.passages[60:]
    assert len(shorts) == 5 and all(len(ngrams.words(text)) < 13 for text in shorts)
    assert all(len(ngrams.text_ngrams(text, 13)) == 0 for text in shorts)


def test_a_drop_beats_redacted_for_the_same_line(tmp_path):
    spans = np.array([[0, 4]])
    decision_files.write_decisions(
        [decision_files.redaction(3, spans), (3, decision_files.DUPLICATE),
         decision_files.redaction(5, spans)], directory=str(tmp_path), file_index=0)
    loaded = decision_files.Decisions.load(str(tmp_path), 0)
    assert loaded.reason(3) == decision_files.DUPLICATE
    assert loaded.reason(5) == decision_files.REDACTED and loaded.spans(5).tolist() == [[0, 4]]
