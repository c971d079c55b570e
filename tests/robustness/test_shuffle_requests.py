"""``--shuffle=global`` on an object store: the shard writer reads the parts in blocks, at most
one GET per 100 records, counted by a proxy between s3fs and the S3 emulator (moto)."""

from __future__ import annotations

import numpy as np

from common import storage
from pipeline.write.order import plan_ordered_shards
from pipeline.write.pack import PackedChunk, PackStats
from pipeline.write.parts import write_part
from pipeline.write.shards import assemble_shard
from schemas.records import RecordSpec, frame_bytes, iter_tfrecord_frames
from tests.conftest import use_s3_environment
from tests.robustness.fault_proxy import GetCounter

PARTS, PER_PART = 10, 700  # a part's last block is short: 700 = 2 * 256 + 188


def _write_parts(directory: str, spec: RecordSpec):
    parts = []
    for index in range(PARTS):
        numbers = np.arange(index * PER_PART, (index + 1) * PER_PART, dtype=np.uint16)
        tokens = np.repeat(numbers[:, None], spec.seq_len + 1, axis=1) + 1  # 1..: no padding
        chunk = PackedChunk(index, 0, {"tokens": tokens}, PackStats(), {})
        parts.append(write_part(chunk, directory=directory, spec=spec, pad_id=0))
    return parts


def test_a_global_shuffle_reads_at_most_one_get_per_100_records(s3, s3_server, monkeypatch):
    spec = RecordSpec(seq_len=15, token_dtype="uint16")
    size = frame_bytes(spec)
    directory = s3.url("shuffled")
    parts = _write_parts(directory, spec)
    records = PARTS * PER_PART
    order, plans = plan_ordered_shards(parts, split="train", per_shard=records // 2,
                                       seq_len=spec.seq_len, frame_bytes=size, seed=0)
    with GetCounter(s3_server, marker="/.parts/") as proxy:
        use_s3_environment(monkeypatch, proxy.url)
        infos = [assemble_shard(plan, directory=directory, frame_bytes=size, order=order)
                 for plan in plans]
        gets = list(proxy.gets)
    use_s3_environment(monkeypatch, s3_server)

    print(f"{len(gets)} GETs of parts for {records} records in {len(infos)} shards")
    assert len(infos) == 2 and sum(i.records for i in infos) == records
    assert 0 < len(gets) <= records // 100
    # Every record once, shuffled: neighbours mostly from different parts.
    numbers = []
    for info in infos:
        fs, path = storage.filesystem(storage.join(directory, info.path))
        with fs.open(path, "rb") as handle:  # a record's last token is its number + 1
            numbers += [int(np.frombuffer(p[-2:], dtype="<u2")[0]) - 1
                        for p in iter_tfrecord_frames(handle)]
    assert sorted(numbers) == list(range(records))
    part = np.array(numbers) // PER_PART
    assert np.mean(part[1:] == part[:-1]) < 0.2
