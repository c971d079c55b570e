"""tokenize.py: per-subset statistics of a chunk, and in-process encoding equal to
SentencePiece's own ``encode`` (as a DoFn called directly and as a Beam transform)."""

import numpy as np
import pytest

from pipeline.parse import Document
from pipeline.read import Chunk
from pipeline.subset_stats import SubsetStats
from pipeline.tokenize import Tokenize, TokenizedChunk, _TokenizeFn, subset_stats
from tokenizer.encoder import load_model_bytes, processor_from_bytes


def _doc(text: str, subset: str, line: int = 1) -> Document:
    return Document(text=text, subset=subset, line=line, text_bytes=len(text.encode("utf-8")))


# Code, runs of spaces, tabs, CRLF, NUL, characters outside a 300-piece vocabulary, and the
# one character that decodes differently (U+2581).
TEXTS = ["def f(x):\n\treturn x + 1\n", "  two  spaces\r\n", "a\x00b", "日本語 🙂 café",
         "a\u2581b", "x"]


@pytest.fixture(scope="module")
def sp(tiny_model):
    return processor_from_bytes(load_model_bytes(str(tiny_model)))


def test_subset_stats_counts_per_subset_and_lossy_documents():
    chunk = Chunk(file_index=0, chunk_index=0, documents=(
        _doc("ab", "A"),            # 2 bytes
        _doc("é\u2581", "B"),       # 2 + 3 bytes, holds U+2581
        _doc("xyz", "A"),           # 3 bytes
    ))
    ids = [np.array([5, 6]), np.array([7, 8, 9]), np.array([10])]
    assert subset_stats(chunk, ids) == {
        "A": SubsetStats(documents=2, bytes=5, tokens=3, lossy_documents=0),
        "B": SubsetStats(documents=1, bytes=5, tokens=3, lossy_documents=1),
    }


def test_subset_stats_of_an_empty_chunk():
    assert subset_stats(Chunk(file_index=0, chunk_index=0, documents=()), []) == {}


def test_tokenize_fn_in_process_equals_sentencepiece_encode(tiny_model, sp):
    chunk = Chunk(file_index=3, chunk_index=7,
                  documents=tuple(_doc(t, "B" if t == "a\u2581b" else "A", i + 1)
                                  for i, t in enumerate(TEXTS)))
    fn = _TokenizeFn(model_path=str(tiny_model), num_threads=1, processes=1, pool_if_auto=False)
    fn.setup()
    fn.start_bundle()
    (result,) = list(fn.process(chunk))
    assert list(fn.finish_bundle()) == []  # in-process: nothing held back
    fn.teardown()
    assert isinstance(result, TokenizedChunk)
    assert (result.file_index, result.chunk_index) == (3, 7)
    assert [ids.tolist() for ids in result.documents] == [sp.encode(t) for t in TEXTS]
    lossy = sp.encode("a\u2581b")
    assert result.subsets["B"] == SubsetStats(documents=1, bytes=5, tokens=len(lossy),
                                              lossy_documents=1)
    assert result.subsets["A"].documents == 5 and result.subsets["A"].lossy_documents == 0
    assert sum(s.tokens for s in result.subsets.values()) == sum(len(sp.encode(t)) for t in TEXTS)


def test_tokenize_transform_keeps_each_chunk_and_its_ids(tiny_model, sp):
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline
    from apache_beam.testing.util import assert_that, equal_to

    chunks = [Chunk(file_index=f, chunk_index=c, documents=(_doc(TEXTS[f + c], "A"),))
              for f, c in ((0, 0), (0, 1), (1, 0))]
    expected = [(c.file_index, c.chunk_index, tuple(sp.encode(c.documents[0].text)))
                for c in chunks]
    with TestPipeline(runner="DirectRunner") as p:
        out = (
            p
            | beam.Create(chunks)
            | Tokenize(model_path=str(tiny_model), num_threads=1, processes=1)
            | beam.Map(lambda t: (t.file_index, t.chunk_index, tuple(t.documents[0].tolist())))
        )
        assert_that(out, equal_to(expected))
