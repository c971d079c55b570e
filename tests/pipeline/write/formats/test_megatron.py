"""pipeline/write/formats/megatron.py and megatron_plan.py: document parts, the pair plan's worked
example, and pairs assembled byte for byte as the format says."""

import hashlib
import tracemalloc

import numpy as np
import pytest

from common.errors import ConfigError, DataError
from pipeline.config import PipelineConfig
from pipeline.write.formats.megatron import assemble_pair, write_document_part
from pipeline.write.formats.megatron_plan import DocumentPartInfo, plan_pairs
from pipeline.write.pack import document_stream
from schemas.megatron_index import encode_index


def _info(index, nbytes, *, epoch=0, documents=1):
    return DocumentPartInfo(file_index=0, chunk_index=index, path=f"p{epoch}-{index}",
                            documents=documents if nbytes else 0, tokens=nbytes // 2,
                            bytes=nbytes, epoch=epoch)


def test_plan_worked_example():
    parts = [_info(i, n) for i, n in enumerate([40, 0, 30, 50, 10])]
    plans = plan_pairs(reversed(parts), split="train", shard_bytes=80, token_bytes=2)
    assert [[p.chunk_index for p in plan.parts] for plan in plans] == [[0, 2], [3, 4]]
    assert [plan.prefix for plan in plans] == ["megatron/train-00000-of-00002",
                                               "megatron/train-00001-of-00002"]
    assert [plan.tokens for plan in plans] == [35, 30]


def test_plan_orders_epochs_after_the_input_and_keeps_a_large_part_alone():
    parts = [_info(0, 20, epoch=1), _info(1, 200), _info(0, 20)]
    plans = plan_pairs(parts, split="s", shard_bytes=100, token_bytes=2)
    assert [[(p.epoch, p.chunk_index) for p in plan.parts] for plan in plans] == [
        [(0, 0)], [(0, 1)], [(1, 0)]]


def test_plan_refuses_a_chunk_reported_twice_or_a_wrong_size():
    with pytest.raises(DataError, match="processed twice"):
        plan_pairs([_info(0, 20), _info(0, 20)], split="s", shard_bytes=100, token_bytes=2)
    bad = DocumentPartInfo(0, 0, "p", documents=1, tokens=3, bytes=7)
    with pytest.raises(DataError, match="expected 3 tokens of 2 bytes"):
        plan_pairs([bad], split="s", shard_bytes=100, token_bytes=2)


def test_document_stream_is_the_packed_stream_without_its_leading_eos():
    tokens, lengths = document_stream([np.array([5, 6, 7]), np.array([8, 9])], eos_id=1,
                                      dtype=np.uint16)
    assert tokens.tolist() == [5, 6, 7, 1, 8, 9, 1] and tokens.dtype == np.uint16
    assert lengths.tolist() == [4, 3]


def test_pair_is_the_parts_tokens_and_their_index(tmp_path):
    docs = [[np.array([5, 6, 7]), np.array([8, 9])], [np.array([10])]]
    infos = []
    for chunk, documents in enumerate(docs):
        tokens, lengths = document_stream(documents, eos_id=1, dtype=np.int32)
        infos.append(write_document_part(file_index=0, chunk_index=chunk, epoch=0,
                                         tokens=tokens, lengths=lengths,
                                         directory=str(tmp_path)))
    assert infos[0].path == ".parts/00000-0000000.documents"
    (plan,) = plan_pairs(infos, split="t", shard_bytes=1 << 20, token_bytes=4)
    info = assemble_pair(plan, directory=str(tmp_path), dtype="int32")
    data = (tmp_path / "megatron/t-00000-of-00001.bin").read_bytes()
    assert np.frombuffer(data, "<i4").tolist() == [5, 6, 7, 1, 8, 9, 1, 10, 1]
    index = (tmp_path / "megatron/t-00000-of-00001.idx").read_bytes()
    assert index == encode_index(np.array([4, 3, 2]), dtype="int32")
    assert (info.documents, info.tokens, info.bin_bytes) == (3, 9, 36)
    assert info.bin_sha256 == hashlib.sha256(data).hexdigest()
    assert info.idx_sha256 == hashlib.sha256(index).hexdigest()


@pytest.mark.parametrize("formats, message", [
    (("tfrecord", "megatorn"), "unknown format.*'megatorn'"),
    (("megatron",), "must include tfrecord"),
    (("tfrecord", "tfrecord"), "twice"),
])
def test_formats_flag_is_checked(formats, message):
    with pytest.raises(ConfigError, match=message):
        PipelineConfig(formats=formats)
    assert PipelineConfig().formats == ("tfrecord",)


def test_assembling_a_pair_holds_about_one_part_in_memory(tmp_path):
    # Each part's bytes are dropped once copied: only its small lengths are kept for the .idx.
    part_bytes, parts = 1 << 20, 8
    lengths = np.full(256, part_bytes // 2 // 256, dtype=np.int32)
    tokens = np.arange(int(lengths.sum()), dtype=np.uint16)
    infos = [write_document_part(file_index=0, chunk_index=c, epoch=0, tokens=tokens,
                                 lengths=lengths, directory=str(tmp_path)) for c in range(parts)]
    del tokens
    (plan,) = plan_pairs(infos, split="t", shard_bytes=1 << 30, token_bytes=2)
    tracemalloc.start()
    try:
        info = assemble_pair(plan, directory=str(tmp_path), dtype="uint16")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.bin_bytes == parts * part_bytes
    assert peak < 1.5 * part_bytes, f"peak {peak} bytes for parts of {part_bytes}"
