"""pack.py: the docstring's worked example and the invariants the trainer relies on."""

import numpy as np
import pytest

from pipeline.write.pack import PackStats, pack_documents, segments_for

EOS, PAD = 1, 0


def _pack(docs, seq_len, last_record="pad"):
    return pack_documents([np.array(d) for d in docs], seq_len=seq_len, eos_id=EOS, pad_id=PAD,
                          last_record=last_record, dtype=np.uint16)


def test_worked_example():
    records, stats = _pack([[5, 6, 7], [8, 9]], 4)
    assert records.tolist() == [[1, 5, 6, 7, 1], [1, 8, 9, 1, 0]]
    assert records.dtype == np.uint16
    assert stats == PackStats(records=2, tokens=7, padding_tokens=1, partial_records=1)
    segment_ids, positions = segments_for(records, eos_id=EOS, pad_id=PAD, index_dtype=np.uint16)
    assert segment_ids.tolist() == [[1, 1, 1, 1, 2], [1, 1, 1, 2, 0]]
    assert positions.tolist() == [[0, 1, 2, 3, 0], [0, 1, 2, 0, 0]]


def test_drop_last_record_counts_dropped_tokens():
    records, stats = _pack([[5, 6, 7], [8, 9]], 4, last_record="drop")
    assert records.tolist() == [[1, 5, 6, 7, 1]]
    assert stats == PackStats(records=1, tokens=4, dropped_records=1, dropped_tokens=3)


def test_exact_fit_has_no_partial_record():
    records, stats = _pack([[5, 6, 7]], 4)  # stream 1 5 6 7 1 = exactly one record
    assert records.tolist() == [[1, 5, 6, 7, 1]]
    assert stats.partial_records == 0 and stats.padding_tokens == 0


def test_empty_chunk():
    records, stats = _pack([], 4)  # stream is a lone EOS: nothing to learn
    assert records.shape == (0, 5) and stats == PackStats()


@pytest.mark.parametrize("seq_len", [1, 2, 3, 7, 64])
def test_roundtrip_and_every_label_once(seq_len):
    rng = np.random.default_rng(seq_len)
    docs = [rng.integers(4, 500, size=rng.integers(1, 40)) for _ in range(25)]
    records, stats = _pack(docs, seq_len)
    # Dropping each record's first token and the padding restores "d1 EOS d2 EOS ... dn EOS".
    labels = np.concatenate([r[1:][r[1:] != PAD] for r in records])
    expected = np.concatenate([np.append(d, EOS) for d in docs])
    assert labels.tolist() == expected.tolist()
    assert stats.tokens == len(expected)
    # Every record but the last is full; consecutive records overlap by one token.
    assert all((r != PAD).all() for r in records[:-1])
    assert all(records[i][-1] == records[i + 1][0] for i in range(len(records) - 1))


def test_id_that_does_not_fit_is_an_error():
    with pytest.raises(ValueError, match="does not fit"):
        _pack([[70000]], 4)
