"""shuffle_write.py: globally shuffled shards hold every record exactly once, in the order of
the seeded permutation, with each shard's padding counted; without Beam."""

import numpy as np

from pipeline.write.pack import PackedChunk, PackStats
from pipeline.write.parts import write_part
from pipeline.write.permutation import Permutation
from pipeline.write.shuffled import assemble_shuffled_shard, plan_shuffled_shards
from schemas.records import RecordSpec, frame_bytes, iter_tfrecord_frames

SPEC = RecordSpec(seq_len=7, token_dtype="uint16", with_segments=False)


def _parts(tmp_path):
    """Parts of 5, 0, 7 and 4 records (epochs 0 and 1); every record's tokens are its number;
    the last record of the 7-record part holds 3 padding tokens (pad id 0)."""
    chunks, number = [], 1
    for epoch, file_index, records in ((0, 0, 5), (0, 1, 0), (0, 2, 7), (1, 0, 4)):
        rows = np.arange(number, number + records, dtype=np.uint16)[:, None].repeat(8, axis=1)
        if records == 7:
            rows[-1, -3:] = 0
        number += records
        chunks.append(PackedChunk(file_index, 0, {"tokens": rows}, PackStats(), {}, epoch=epoch))
    return [write_part(c, directory=str(tmp_path), spec=SPEC, pad_id=0) for c in chunks]


def _shards(tmp_path, parts, *, seed):
    size = frame_bytes(SPEC)
    table, plans = plan_shuffled_shards(parts, split="s", per_shard=5, seq_len=7, frame_bytes=size,
                                        seed=seed)
    infos = [assemble_shuffled_shard(plan, table=table, directory=str(tmp_path), frame_bytes=size,
                                     window_bytes=2 * size) for plan in plans]
    order = []
    for info in infos:
        with open(tmp_path / info.path, "rb") as handle:
            payloads = list(iter_tfrecord_frames(handle))
        assert len(payloads) == info.records
        order += [int(np.frombuffer(p[-16:], dtype="<u2")[0]) for p in payloads]
    return infos, order


def test_every_record_once_in_the_permutations_order(tmp_path):
    parts = _parts(tmp_path)
    infos, order = _shards(tmp_path, parts, seed=0)
    assert [(i.path, i.records) for i in infos] == [
        ("s-00000-of-00004.tfrecord", 5), ("s-00001-of-00004.tfrecord", 5),
        ("s-00002-of-00004.tfrecord", 5), ("s-00003-of-00004.tfrecord", 1)]
    assert sorted(order) == list(range(1, 17))  # a permutation of the 16 records
    # Unshuffled numbering: epoch 0 files 0, 2 (records 1-12), then epoch 1 (13-16).
    assert order == (Permutation(n=16, seed=0).forward(np.arange(16)) + 1).tolist()
    padded_shard = [i for i in infos if i.padding_tokens]
    assert len(padded_shard) == 1 and padded_shard[0].padding_tokens == 3
    assert sum(i.tokens for i in infos) == 16 * 7 - 3


def test_deterministic_per_seed(tmp_path):
    parts = _parts(tmp_path)
    first = _shards(tmp_path, parts, seed=0)
    assert _shards(tmp_path, parts, seed=0) == first
    again = _shards(tmp_path, parts, seed=1)
    assert sorted(again[1]) == sorted(first[1]) and again[1] != first[1]
