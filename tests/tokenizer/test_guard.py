"""tokenizer/guard.py: the sample is deterministic, special documents are always checked, an
injected mismatch stops the run naming file and line, or is re-encoded and counted."""

import numpy as np
import pytest

from tokenizer.backends import documented_encode
from tokenizer.guard import ChunkEncoder, EncoderMismatchError, sampled

TEXTS = ["def f(x):\n    return x\n", "plain words here", "eos in code: '</s>'", "a\u2581b",
         "more plain text", "x = 1"]


def test_the_sample_is_a_deterministic_one_in_n_by_file_and_line():
    picks = [sampled("dev/00.jsonl.zst", line, 64) for line in range(1, 6401)]
    assert picks == [sampled("dev/00.jsonl.zst", line, 64) for line in range(1, 6401)]
    assert 70 <= sum(picks) <= 130  # ~100 expected
    assert picks != [sampled("dev/01.jsonl.zst", line, 64) for line in range(1, 6401)]
    assert picks == [sampled("s3://bucket/pile/00.jsonl.zst", line, 64)  # local or S3: same
                     for line in range(1, 6401)]
    assert not any(sampled("f", line, 0) for line in range(100))
    assert all(sampled("f", line, 1) for line in range(100))


def test_special_documents_are_always_checked_and_counted(model_bytes):
    encoder = ChunkEncoder(model_proto=model_bytes, encoder="gigatoken", check_every=0)
    ids, stats = encoder.encode(TEXTS, path="in.jsonl", lines=[1, 2, 3, 4, 5, 6])
    assert [a.tolist() for a in ids] == [documented_encode(encoder.backend.processor, t)
                                        for t in TEXTS]
    assert (stats.backend, stats.documents, stats.checked_documents, stats.mismatches,
            stats.fallback_chunks, stats.space_symbol_documents) == ("gigatoken", 6, 2, 0, 0, 1)
    every = ChunkEncoder(model_proto=model_bytes, encoder="gigatoken", check_every=1)
    assert every.encode(TEXTS, path="in.jsonl", lines=[1, 2, 3, 4, 5, 6])[1].checked_documents == 6


def test_the_sentencepiece_backend_is_the_reference_and_is_not_checked(model_bytes):
    encoder = ChunkEncoder(model_proto=model_bytes, encoder="sentencepiece", check_every=1)
    _, stats = encoder.encode(TEXTS, path="in.jsonl", lines=list(range(1, 7)))
    assert (stats.backend, stats.checked_documents) == ("sentencepiece", 0)


class _CorruptOne:
    """A test double: the real backend, with one id of one document changed."""

    def __init__(self, backend, victim: str):
        self._backend, self._victim = backend, victim

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def encode_batch(self, texts):
        out = self._backend.encode_batch(texts)
        for i, text in enumerate(texts):
            if text == self._victim:
                out[i] = out[i].copy()
                out[i][1] += 1
        return out


@pytest.fixture
def corrupted(model_bytes):
    def make(on_mismatch):
        encoder = ChunkEncoder(model_proto=model_bytes, encoder="gigatoken", check_every=1,
                               on_mismatch=on_mismatch)
        encoder.backend = _CorruptOne(encoder.backend, TEXTS[4])
        return encoder
    return make


def test_a_mismatch_stops_the_run_naming_file_and_line(corrupted):
    with pytest.raises(EncoderMismatchError) as caught:
        corrupted("fail").encode(TEXTS, path="s3://b/pile/07.jsonl.zst", lines=[3, 5, 8, 9, 12, 13])
    message = str(caught.value)
    assert message.startswith("s3://b/pile/07.jsonl.zst line 12: the gigatoken ")
    assert "differ from SentencePiece's from token 1 on" in message
    assert "--encoder=sentencepiece" in message and "--on_encoder_mismatch=fallback" in message
    # What Beam does to it: re-raised with its message, found again by the CLI.
    from common.errors import find_error
    assert isinstance(find_error(RuntimeError(f"x\n{type(caught.value).__module__}."
                                              f"EncoderMismatchError: {message}")),
                      EncoderMismatchError)


def test_fallback_reencodes_the_chunk_with_sentencepiece_and_counts_it(corrupted, model_bytes):
    encoder = corrupted("fallback")
    ids, stats = encoder.encode(TEXTS, path="in.jsonl", lines=list(range(1, 7)))
    assert [a.tolist() for a in ids] == [documented_encode(encoder.backend.processor, t)
                                        for t in TEXTS]
    assert (stats.checked_documents, stats.mismatches, stats.fallback_chunks) == (6, 1, 1)
    assert all(isinstance(a, np.ndarray) for a in ids)
