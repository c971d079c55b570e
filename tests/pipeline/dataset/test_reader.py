"""reader.py: packed records read back into documents (the inverse of pack.py).

Worked example, seq_len 4 (records of 5 tokens that overlap by one), EOS 1, PAD 0:

    chunk 1: documents [5 6 7] [8] [9 10 11 12 13]
             stream  1 5 6 7 1 8 1 9 10 11 12 13 1
             records [1 5 6 7 1] [1 8 1 9 10] [10 11 12 13 1]
    chunk 2: documents [20 21]
             stream  1 20 21 1
             records [1 20 21 1 0]                      (padded)

Dropping each record's first token and the padding leaves ``5 6 7 1 8 1 9 10 11 12 13 1 20 21 1``.
"""

import numpy as np
import pytest

from common.errors import DataError
from datagen.datasets import write_dataset
from pipeline.dataset.reader import iter_documents, iter_record_batches
from pipeline.write.pack import pack_documents
from schemas import manifest as manifest_lib

CHUNK_1 = [[1, 5, 6, 7, 1], [1, 8, 1, 9, 10], [10, 11, 12, 13, 1]]
CHUNK_2 = [[1, 20, 21, 1, 0]]
DOCUMENTS = [[5, 6, 7], [8], [9, 10, 11, 12, 13], [20, 21]]


def _dataset(tmp_path, shards) -> manifest_lib.Dataset:
    path = write_dataset(str(tmp_path), seq_len=4, vocab_size=300,
                         shards=[[np.array(r, dtype=np.uint16) for r in s] for s in shards])
    return manifest_lib.load(path)


def test_worked_example_is_what_pack_writes():
    for documents, records in (([[5, 6, 7], [8], [9, 10, 11, 12, 13]], CHUNK_1),
                               ([[20, 21]], CHUNK_2)):
        packed, _ = pack_documents([np.array(d) for d in documents], seq_len=4, eos_id=1,
                                   pad_id=0, last_record="pad", dtype=np.uint16)
        assert packed.tolist() == records


@pytest.mark.parametrize("shards", [
    [CHUNK_1 + CHUNK_2],
    [CHUNK_1[:2], CHUNK_1[2:] + CHUNK_2],  # a document continued in the next shard
    [CHUNK_1[:1], CHUNK_1[1:], CHUNK_2],
])
def test_documents_come_back_whole_and_in_order(tmp_path, shards):
    documents = [d.tolist() for d in iter_documents(_dataset(tmp_path, shards))]
    assert documents == DOCUMENTS


def test_a_split_ending_inside_a_document_is_an_error(tmp_path):
    dataset = _dataset(tmp_path, [CHUNK_1[:2]])  # as --last_record=drop could leave it
    documents = iter_documents(dataset)
    assert [next(documents).tolist(), next(documents).tolist()] == [[5, 6, 7], [8]]
    with pytest.raises(DataError, match="ends inside a document") as raised:
        next(documents)
    assert dataset.manifest_path in str(raised.value)


def test_record_batches_are_parsed_from_the_manifest_spec(tmp_path):
    dataset = _dataset(tmp_path, [CHUNK_1 + CHUNK_2])
    batches = list(iter_record_batches(dataset, dataset.shard_paths()[0], batch=3))
    assert [b["tokens"].shape for b in batches] == [(3, 5), (1, 5)]
    assert batches[0]["tokens"].dtype == np.int32  # uint16 on disk, int32 for models
    assert np.concatenate([b["tokens"] for b in batches]).tolist() == CHUNK_1 + CHUNK_2


def test_a_dropped_tail_inside_the_split_is_not_joined_to_the_next_document(tmp_path):
    # Chunk [5 6 7 8 9]: stream 1 5 6 7 8 9 1 -> record [1 5 6 7 8], tail [8 9 1] dropped.
    # Chunk [20 21 22]:  stream 1 20 21 22 1  -> record [1 20 21 22 1].
    dataset = _dataset(tmp_path, [[[1, 5, 6, 7, 8], [1, 20, 21, 22, 1]]])
    with pytest.raises(DataError):
        list(iter_documents(dataset))  # never [5 6 7 8 20 21 22], two documents joined
