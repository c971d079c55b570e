"""stage.py: per-subset statistics of a chunk, and encoding equal to the documented encoding
(SentencePiece's own ``encode``, U+2581 as its byte pieces) in this thread, in encoder threads
and in encoder processes (as a DoFn called directly and as a Beam transform)."""

import concurrent.futures

import numpy as np
import pytest

from pipeline.read.parse import Document
from pipeline.read.stage import Chunk
from pipeline.tokenize.stage import Tokenize, TokenizedChunk, _TokenizeFn, subset_stats
from pipeline.tokenize.subset_stats import SubsetStats
from tokenizer.backends import documented_encode
from tokenizer.encoder import load_model_bytes, processor_from_bytes
from tokenizer.guard import EncoderMismatchError, EncodeStats


def _doc(text: str, subset: str, line: int = 1) -> Document:
    return Document(text=text, subset=subset, line=line, text_bytes=len(text.encode("utf-8")))


# Code, runs of spaces, tabs, CRLF, NUL, characters outside a 300-piece vocabulary, a control
# piece's text, and U+2581 (encoded as its byte pieces, so it decodes back too).
TEXTS = ["def f(x):\n\treturn x + 1\n", "  two  spaces\r\n", "a\x00b", "日本語 🙂 café",
         "a\u2581b", "x", "s = '</s>'"]


@pytest.fixture(scope="module")
def sp(tiny_model):
    return processor_from_bytes(load_model_bytes(str(tiny_model)))


def _chunk(file_index=3, chunk_index=7) -> Chunk:
    return Chunk(file_index=file_index, chunk_index=chunk_index,
                 documents=tuple(_doc(t, "B" if t == "a\u2581b" else "A", i + 1)
                                 for i, t in enumerate(TEXTS)))


def test_subset_stats_counts_per_subset_and_lossy_documents():
    chunk = Chunk(file_index=0, chunk_index=0, documents=(
        _doc("ab", "A"),            # 2 bytes
        _doc("é\u2581", "B"),       # 2 + 3 bytes, holds U+2581
        _doc("xyz", "A"),           # 3 bytes
    ))
    ids = [np.array([5, 6]), np.array([7, 8, 9]), np.array([10])]
    assert subset_stats(chunk, ids) == {
        "A": SubsetStats(documents=2, bytes=5, tokens=3, lossy_documents=0),
        "B": SubsetStats(documents=1, bytes=5, tokens=3, lossy_documents=0),  # byte pieces
    }
    # Only a model without byte pieces still decodes U+2581 as a space.
    assert subset_stats(chunk, ids, lossless_space_symbol=False)["B"].lossy_documents == 1


def test_subset_stats_of_an_empty_chunk():
    assert subset_stats(Chunk(file_index=0, chunk_index=0, documents=()), []) == {}


def _run_fn(fn, chunks):
    fn.setup()
    fn.start_bundle()
    out = [item for chunk in chunks for item in fn.process(chunk)]
    held_back = list(fn.finish_bundle())
    fn.teardown()
    return out, held_back


@pytest.mark.parametrize("encoder", ["gigatoken", "sentencepiece"])
def test_tokenize_fn_in_process_equals_the_documented_encoding(tiny_model, sp, encoder):
    fn = _TokenizeFn(model_path=str(tiny_model), threads=1, processes=1, pool_if_auto=False,
                     encoder=encoder, check_every=1, file_paths=("a", "b", "c", "in.jsonl"))
    (result, stats), held_back = _run_fn(fn, [_chunk()])
    assert held_back == []  # in this thread: nothing held back
    assert isinstance(result, TokenizedChunk)
    assert (result.file_index, result.chunk_index) == (3, 7)
    assert [ids.tolist() for ids in result.documents] == [documented_encode(sp, t) for t in TEXTS]
    assert [sp.decode(ids.tolist()) for ids in result.documents] == TEXTS  # every one lossless
    assert result.subsets["B"] == SubsetStats(documents=1, bytes=5, lossy_documents=0,
                                              tokens=len(documented_encode(sp, "a\u2581b")))
    assert result.subsets["A"].documents == 6 and result.subsets["A"].lossy_documents == 0
    assert stats.tag == "encoder_stats" and isinstance(stats.value, EncodeStats)
    checked = len(TEXTS) if encoder == "gigatoken" else 0
    assert (stats.value.backend, stats.value.documents, stats.value.checked_documents,
            stats.value.space_symbol_documents) == (encoder, len(TEXTS), checked, 1)


@pytest.mark.parametrize("encoder, processes", [("gigatoken", 0), ("sentencepiece", 2)])
def test_encoder_threads_and_processes_keep_input_order(tiny_model, sp, encoder, processes):
    """gigatoken: threads of this process (pool_if_auto); sentencepiece: a process pool."""
    chunks = [_chunk(file_index=0, chunk_index=i) for i in range(5)]
    fn = _TokenizeFn(model_path=str(tiny_model), threads=2, processes=processes,
                     pool_if_auto=True, encoder=encoder)
    out, held_back = _run_fn(fn, chunks)
    results = [item for item in out if isinstance(item, TokenizedChunk)]
    results += [item.value for item in held_back if isinstance(item.value, TokenizedChunk)]
    assert [r.chunk_index for r in results] == [0, 1, 2, 3, 4]
    expected = [documented_encode(sp, t) for t in TEXTS]
    assert all([ids.tolist() for ids in r.documents] == expected for r in results)


@pytest.mark.parametrize("encoder, processes, threads, pool_if_auto, built", [
    # A thread per (3) core, each encoding on its own thread with the GIL-free batch call.
    ("gigatoken", 0, 0, True, (concurrent.futures.ThreadPoolExecutor, 3, 1, True)),
    # In this thread, the backend's own thread per core.
    ("gigatoken", 1, 0, True, (type(None), 1, 3, False)),
    # Built for threads first; sentencepiece holds the GIL: rebuilt with its own 2 threads.
    ("sentencepiece", 0, 2, False, (type(None), 1, 2, False)),
    ("sentencepiece", 1, 0, False, (type(None), 1, 1, False)),
])
def test_setup_builds_what_the_plan_says(tiny_model, monkeypatch, encoder, processes, threads,
                                         pool_if_auto, built):
    """(pool, chunks in flight, threads of this process's encoder, gil_free) after setup();
    the pool of processes is test_encoder_threads_and_processes_keep_input_order's."""
    monkeypatch.setattr("tokenizer.encoder.usable_cores", lambda: 3)
    fn = _TokenizeFn(model_path=str(tiny_model), threads=threads, processes=processes,
                     pool_if_auto=pool_if_auto, encoder=encoder)
    fn.setup()
    try:
        backend = fn._encoder.backend
        assert backend.name == encoder
        assert (type(fn._pool), fn._workers, fn._encoder._num_threads,
                getattr(backend, "_gil_free", False)) == built
        assert fn._pool is None or fn._pool._max_workers == built[1]
    finally:
        fn.teardown()


def test_a_guard_mismatch_fails_the_chunk_naming_the_input_file(tiny_model, monkeypatch):
    from tokenizer.backends import GigatokenBackend

    real = GigatokenBackend._encode_plain
    monkeypatch.setattr(GigatokenBackend, "_encode_plain",  # a test double: one id corrupted
                        lambda self, texts: [ids + (t == "x") for t, ids in
                                             zip(texts, real(self, texts))])
    fn = _TokenizeFn(model_path=str(tiny_model), threads=1, processes=1, pool_if_auto=False,
                     encoder="gigatoken", check_every=1, file_paths=("a", "b", "c", "in.jsonl"))
    with pytest.raises(EncoderMismatchError, match="^in.jsonl line 6: the gigatoken"):
        _run_fn(fn, [_chunk()])


def test_tokenize_transform_keeps_each_chunk_and_its_ids(tiny_model, sp):
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline
    from apache_beam.testing.util import assert_that, equal_to

    chunks = [Chunk(file_index=f, chunk_index=c, documents=(_doc(TEXTS[f + c], "A"),))
              for f, c in ((0, 0), (0, 1), (1, 0))]
    expected = [(c.file_index, c.chunk_index, tuple(documented_encode(sp, c.documents[0].text)))
                for c in chunks]
    with TestPipeline(runner="DirectRunner") as p:
        out = (
            p
            | beam.Create(chunks)
            | Tokenize(model_path=str(tiny_model), threads=1, processes=1)
        )
        ids = out.chunks | beam.Map(lambda t: (t.file_index, t.chunk_index,
                                               tuple(t.documents[0].tolist())))
        assert_that(ids, equal_to(expected))
        documents = out.encoder_stats | beam.Map(lambda s: s.documents) | beam.CombineGlobally(sum)
        assert_that(documents, equal_to([3]), label="StatsPerChunk")
