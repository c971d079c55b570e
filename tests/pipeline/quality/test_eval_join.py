"""The keyed join of ``--decontaminate``: shards, the per-shard sets and the join's hits, which
must be exactly what one whole evaluation set finds, however the n-grams are split."""

import random

import apache_beam as beam
import numpy as np
import pytest

from datagen.contamination import make_corpus
from datagen.pile_files import write_jsonl
from pipeline.quality import eval_join, ngrams
from pipeline.quality.eval_filter import EvalFilter
from pipeline.quality.eval_sets import EvalFile
from pipeline.read.parse import Document
from pipeline.read.stage import Chunk

N = 13


def test_shard_count_grows_with_the_evaluation_files_and_is_bounded():
    assert eval_join.shard_count(0) == 1
    assert eval_join.shard_count(eval_join.SHARD_NGRAMS) == 1
    assert eval_join.shard_count(eval_join.SHARD_NGRAMS + 1) == 2
    assert eval_join.shard_count(1 << 50) == eval_join.MAX_SHARDS


def test_shard_of_is_the_hash_modulo_the_shards():
    hashes = np.array([0, 5, 2**64 - 1], dtype=np.uint64)
    assert eval_join.shard_of(hashes, shards=3).tolist() == [0, 2, (2**64 - 1) % 3]


def test_union_ors_the_masks_of_repeated_hashes():
    merged = eval_join.union(N, np.array([9, 3, 9], dtype=np.uint64),
                             np.array([1, 2, 4], dtype=np.uint64))
    assert merged.hashes.tolist() == [3, 9] and merged.sets.tolist() == [2, 5]


def _combine(pieces, splits):
    """ShardSetFn over ``pieces`` cut into ``splits`` accumulators, merged."""
    fn = eval_join.ShardSetFn(n=N)
    accumulators = []
    for part in np.array_split(np.arange(len(pieces)), splits):
        acc = fn.create_accumulator()
        for i in part:
            acc = fn.add_input(acc, pieces[i])
        accumulators.append(acc)
    return fn.extract_output(fn.merge_accumulators(accumulators))


def test_shard_sets_do_not_depend_on_how_pieces_are_split():
    rng = np.random.default_rng(0)
    pieces = [(int(rng.integers(3)), rng.integers(0, 5000, size=3000).astype(np.uint64))
              for _ in range(20)]
    whole = ngrams.EvalSet.build(pieces, n=N)
    for splits in (1, 3, 20):
        got = _combine(pieces, splits)
        assert got.hashes.tolist() == whole.hashes.tolist()
        assert got.sets.tolist() == whole.sets.tolist()


def _documents(texts):
    return tuple(Document(line=i + 1, text=text, subset="A", text_bytes=len(text))
                 for i, text in enumerate(texts))


@pytest.mark.parametrize("shards", [1, 4, 7])
def test_the_join_finds_what_the_whole_set_finds(tmp_path, shards):
    made = make_corpus(seed=3, documents=60, passages=12, planted=15, min_words=13)
    for index, passages in enumerate((made.passages[:6], made.passages[6:])):
        write_jsonl(tmp_path / f"eval{index}.jsonl", [{"text": t} for t in passages])
    files = [EvalFile(str(tmp_path / f"eval{i}.jsonl"), i, "text") for i in range(2)]
    # Pieces of 50 n-grams: every file gives many pieces per shard.
    pieces = [v for f in files for v in eval_join.eval_pieces(f, n=N, shards=shards,
                                                               piece_ngrams=50)
              if not isinstance(v, beam.pvalue.TaggedOutput)]
    stats = [v.value for f in files for v in eval_join.eval_pieces(f, n=N, shards=shards)
             if isinstance(v, beam.pvalue.TaggedOutput)]
    assert [(s.set_index, s.passages) for s in stats] == [(0, 6), (1, 6)]
    by_shard = {}
    for shard, piece in pieces:
        by_shard.setdefault(shard, []).append(piece)
    sets = {shard: _combine(mine, 2) for shard, mine in by_shard.items()}
    whole = ngrams.EvalSet.build(
        [(f.set_index, np.concatenate([ngrams.text_ngrams(t, N) for t in ps]))
         for f, ps in zip(files, (made.passages[:6], made.passages[6:]))], n=N)
    assert sum(len(s.hashes) for s in sets.values()) == len(whole.hashes)

    chunk = Chunk(file_index=0, chunk_index=4, documents=_documents(made.documents))
    probes = list(eval_join.chunk_probes(chunk, n=N, shards=shards))
    values = {shard: [eval_set] for shard, eval_set in sets.items()}
    for shard, probe in probes:
        values.setdefault(shard, []).append(probe)
    hits = []
    for mine in values.values():
        random.Random(shards).shuffle(mine)  # the set need not come first
        hits += list(eval_join.join_shard(mine))
    assert {key for key, _ in hits} <= {(0, 4)}
    found = eval_join.doc_hits(h for _, h in hits)
    planted = {plant.document for plant in made.plants}
    assert set(found) == planted
    for index, text in enumerate(made.documents):
        expected = ngrams.match(text, whole, redact=True)
        if index not in found:
            assert expected is None
            continue
        got = ngrams.match_at(text, *found[index], n=N, redact=True)
        assert (got.ngrams, got.sets, got.text) == (expected.ngrams, expected.sets,
                                                    expected.text)
        assert got.spans.tolist() == expected.spans.tolist()
    counts = dict.fromkeys(range(2), 0)
    for eval_set in sets.values():
        for index, count in eval_join.set_ngram_counts(eval_set, sets=2):
            counts[index] += count
    assert counts == {i: int(((whole.sets >> np.uint64(i)) & np.uint64(1)).sum())
                      for i in range(2)}


def test_a_shard_without_evaluation_ngrams_finds_nothing():
    chunk = Chunk(file_index=1, chunk_index=0, documents=_documents(["word " * 40]))
    probes = [probe for _, probe in eval_join.chunk_probes(chunk, n=N, shards=1)]
    assert probes and list(eval_join.join_shard(probes)) == []


def _join(sets, chunk, *, shards, candidates):
    """Every hit of ``chunk`` against the shard ``sets``, and the n-grams its probes carried."""
    values = {shard: [eval_set] for shard, eval_set in sets.items()}
    carried = 0
    for shard, probe in eval_join.chunk_probes(chunk, n=N, shards=shards,
                                               candidates=candidates):
        values.setdefault(shard, []).append(probe)
        carried += len(probe.hashes)
    hits = [hit for mine in values.values() for _, hit in eval_join.join_shard(mine)]
    return eval_join.doc_hits(hits), carried


@pytest.mark.parametrize("size_bits,probes", [(1 << 16, 8), (1 << 10, 1)])
def test_the_filter_changes_no_hit_and_carries_fewer_ngrams(tmp_path, size_bits, probes):
    """With the evaluation n-grams' Bloom filter the probes carry only candidates, and the
    join's hits (so every decision) are those without it; also with a filter so small that most
    of what passes is a false positive."""
    made = make_corpus(seed=5, documents=80, passages=10, planted=20, min_words=13)
    write_jsonl(tmp_path / "eval.jsonl", [{"text": t} for t in made.passages])
    file = EvalFile(str(tmp_path / "eval.jsonl"), 0, "text")
    shards = 3
    pieces = [v for v in eval_join.eval_pieces(file, n=N, shards=shards, piece_ngrams=40)
              if not isinstance(v, beam.pvalue.TaggedOutput)]
    by_shard, bloom = {}, EvalFilter.empty(size_bits=size_bits, probes=probes)
    for shard, piece in pieces:
        by_shard.setdefault(shard, []).append(piece)
        bloom.add(piece[1])
    sets = {shard: _combine(mine, 2) for shard, mine in by_shard.items()}
    chunk = Chunk(file_index=2, chunk_index=1, documents=_documents(made.documents))

    plain, every = _join(sets, chunk, shards=shards, candidates=None)
    filtered, carried = _join(sets, chunk, shards=shards, candidates=bloom)
    assert set(plain) == {plant.document for plant in made.plants}
    assert set(filtered) == set(plain)
    for doc, (positions, masks) in plain.items():
        order, got = np.argsort(positions), filtered[doc]
        mine = np.argsort(got[0])
        assert got[0][mine].tolist() == positions[order].tolist()
        assert got[1][mine].tolist() == masks[order].tolist()
    assert carried < every
    if size_bits > 1 << 10:  # a well-sized filter: the hits and a few false positives
        assert carried <= sum(len(p) for p, _ in plain.values()) + every // 100


def test_a_split_chunk_sends_only_its_suspects_to_the_join(tmp_path):
    """``split_chunk``: the documents without a candidate n-gram skip the join (``clean``),
    the others keep their order (``suspect``), and the join's hits on them are the whole
    chunk's."""
    made = make_corpus(seed=7, documents=50, passages=8, planted=10, min_words=13)
    whole = ngrams.EvalSet.build([(0, np.concatenate([ngrams.text_ngrams(t, N)
                                                      for t in made.passages]))], n=N)
    bloom = EvalFilter.empty(size_bits=1 << 16, probes=8)
    bloom.add(whole.hashes)
    chunk = Chunk(file_index=1, chunk_index=3, documents=_documents(made.documents))
    split = eval_join.split_chunk(chunk, n=N, shards=2, candidates=bloom)
    lines = [d.line for d in split.suspect.documents] + [d.line for d in split.clean.documents]
    assert sorted(lines) == [d.line for d in chunk.documents]
    assert [d.line for d in split.suspect.documents] == sorted(d.line for d in
                                                               split.suspect.documents)
    planted = {plant.document + 1 for plant in made.plants}  # lines count from 1
    assert planted <= {d.line for d in split.suspect.documents}
    assert len(split.suspect.documents) < len(chunk.documents) / 2
    assert all(ngrams.match(d.text, whole, redact=False) is None for d in split.clean.documents)
    sets = {shard: union for shard, union in enumerate(
        [eval_join.union(N, whole.hashes[eval_join.shard_of(whole.hashes, shards=2) == s],
                         whole.sets[eval_join.shard_of(whole.hashes, shards=2) == s])
         for s in range(2)])}
    values = {shard: [eval_set] for shard, eval_set in sets.items()}
    for shard, probe in split.probes:
        assert probe.key == (1, 3)
        values[shard].append(probe)
    found = eval_join.doc_hits(hit for mine in values.values()
                               for _, hit in eval_join.join_shard(mine))
    by_line = {split.suspect.documents[i].line: len(p) for i, (p, _) in found.items()}
    expected = {d.line: ngrams.match(d.text, whole, redact=False).ngrams
                for d in chunk.documents if ngrams.match(d.text, whole, redact=False)}
    assert by_line == expected


def test_a_chunk_without_candidates_is_all_clean():
    chunk = Chunk(file_index=0, chunk_index=0, documents=_documents(["word " * 40]))
    split = eval_join.split_chunk(chunk, n=N, shards=1,
                                  candidates=EvalFilter.empty(size_bits=1 << 10, probes=2))
    assert split.suspect is None and split.probes == []
    assert split.clean == chunk


@pytest.mark.parametrize("size_bits", [1 << 12, 1 << 14, 1 << 16])
def test_a_document_with_any_candidate_is_a_suspect(size_bits):
    """Whatever the filter lets through (from many false positives to few), a document with
    one candidate n-gram or more goes to the join, and only those."""
    made = make_corpus(seed=11, documents=40, passages=6, planted=8, min_words=13)
    bloom = EvalFilter.empty(size_bits=size_bits, probes=2)
    bloom.add(np.concatenate([ngrams.text_ngrams(t, N) for t in made.passages]))
    chunk = Chunk(file_index=0, chunk_index=0, documents=_documents(made.documents))
    split = eval_join.split_chunk(chunk, n=N, shards=3, candidates=bloom)
    count = {d.line: int(bloom.may_contain(ngrams.text_ngrams(d.text, N)).sum())
             for d in chunk.documents}
    suspects = set() if split.suspect is None else {d.line for d in split.suspect.documents}
    assert suspects == {line for line, found in count.items() if found}
    assert sum(len(p.hashes) for _, p in split.probes) == sum(count.values())
