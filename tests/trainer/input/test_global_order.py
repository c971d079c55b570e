"""trainer/input/global_order.py: the same records reach the same step for any number of ranks."""

import concurrent.futures
import os
import time

import fsspec
import numpy as np
import pytest
import tensorflow as tf

from datagen.datasets import write_dataset
from schemas import manifest
from schemas.permutation import Permutation
from schemas.records import SEGMENT_IDS, TOKENS
from trainer.input.block_cache import BlockCache
from trainer.input.global_order import make_global_dataset, plan_global
from trainer.input.record_source import RecordSource
from trainer.input.window_order import expected_amplification, records_at

SIZES = [10, 7, 12, 9, 3]  # 41 records in uneven shards
SEQ_LEN = 4


def numbered_dataset(directory, sizes=SIZES, **kwargs):
    """Record g (in manifest order) is [4 + g % 60, 4 + g // 60, 1, 1, 1]: it names itself."""
    shards, g = [], 0
    for size in sizes:
        shards.append([np.array([4 + (g + i) % 60, 4 + (g + i) // 60] + [1] * (SEQ_LEN - 1))
                       for i in range(size)])
        g += size
    return manifest.load(write_dataset(str(directory), shards=shards, seq_len=SEQ_LEN,
                                       vocab_size=64, **kwargs))


def record_ids(tokens):
    return [int(row[0] - 4 + 60 * (row[1] - 4)) for row in tokens]


def rank_steps(data, *, ranks, replicas_per_rank=1, batch, steps, seed=3, start=0, block=1,
               window=1):
    """Per step, the records of the global batch: every rank's replicas' batches concatenated."""
    per_rank = []
    for rank in range(ranks):
        context = tf.distribute.InputContext(ranks, rank, ranks * replicas_per_rank)
        plan = plan_global(dataset=data, context=context, global_batch_size=batch)
        dataset = make_global_dataset(plan=plan, spec=data.record_spec, seed=seed, start=start,
                                      block=block, window=window)
        batches = [record_ids(inputs[TOKENS].numpy())
                   for inputs, _ in dataset.take(steps * replicas_per_rank)]
        per_rank.append([sum(batches[i:i + replicas_per_rank], [])
                         for i in range(0, len(batches), replicas_per_rank)])
    return [sum((rank[step] for rank in per_rank), []) for step in range(steps)]


def test_the_same_records_reach_the_same_step_on_1_2_3_4_ranks(tmp_path):
    data = numbered_dataset(tmp_path)
    reference = rank_steps(data, ranks=1, batch=12, steps=8)  # 96 records: crosses 2 epochs
    for ranks in (2, 3, 4):
        assert rank_steps(data, ranks=ranks, batch=12, steps=8) == reference, ranks
    assert rank_steps(data, ranks=2, replicas_per_rank=2, batch=12, steps=8) == reference
    stream = sum(reference, [])
    assert stream == records_at(np.arange(96), records=41, seed=3, shuffle=True).tolist()
    # one permutation per epoch: each epoch holds every record once, in a different order
    first, second = stream[:41], stream[41:82]
    assert sorted(first) == sorted(second) == list(range(41)) and first != second
    assert rank_steps(data, ranks=1, batch=12, steps=2, seed=4) != reference[:2]


def test_a_start_position_continues_the_stream_whatever_the_batch(tmp_path):
    data = numbered_dataset(tmp_path)
    stream = sum(rank_steps(data, ranks=1, batch=6, steps=12), [])
    # resumed at position 36 (after 3 steps of 12) on 3 ranks: steps 4.. of the same stream
    assert sum(rank_steps(data, ranks=3, batch=12, steps=3, start=36), []) == stream[36:72]
    # the global batch changed to 4 at position 36: the same records, cut differently
    assert sum(rank_steps(data, ranks=2, batch=4, steps=9, start=36), []) == stream[36:72]


def test_a_block_order_moves_neighbours_together_and_reads_them_at_once(tmp_path):
    stream = records_at(np.arange(20), records=10, seed=1, shuffle=True, block=4).tolist()
    for epoch in (stream[:10], stream[10:]):
        assert sorted(epoch) == list(range(10)) and epoch[8:] == [8, 9]  # the tail stays last
        assert {epoch[0] % 4, epoch[4] % 4} == {0} and epoch[:4] == list(range(epoch[0],
                                                                             epoch[0] + 4))
    assert stream[:8] != list(range(8))
    data = numbered_dataset(tmp_path)
    for ranks in (1, 2, 4):  # still the same records in every step
        assert rank_steps(data, ranks=ranks, batch=8, steps=5, block=8) == rank_steps(
            data, ranks=1, batch=8, steps=5, block=8)
    source = RecordSource(paths=data.shard_paths(), counts=SIZES, frame_bytes=1)
    block = records_at(np.arange(8, 16), records=41, seed=3, shuffle=True, block=8)
    assert len(source.runs(block)) <= 2  # one read, or two where the block spans two shards


def previous_records_at(positions, *, records, seed, block):
    """The order --order_block gave before --order_window (blocks moved whole, the tail last)."""
    epochs, within = np.divmod(positions, records)
    blocks, out = records // block, within.copy()
    for epoch in np.unique(epochs).tolist():
        here = (epochs == epoch) & (within < blocks * block)
        index, offset = np.divmod(within[here], block)
        permutation = Permutation(n=blocks, seed=f"order:{seed}:{epoch}")
        out[here] = permutation.forward(index) * block + offset
    return out


def test_every_epoch_is_a_bijection_for_every_block_and_window():
    for records in range(1, 41):
        for block in (1, 2, 3, 5, 8, 50):
            for window in (1, 2, 3, 4, 16):
                stream = records_at(np.arange(3 * records), records=records, seed=7,
                                    shuffle=True, block=block, window=window)
                for epoch in range(3):
                    got = sorted(stream[epoch * records:(epoch + 1) * records].tolist())
                    assert got == list(range(records)), (records, block, window, epoch)


def test_a_window_of_one_block_is_the_previous_block_order():
    positions = np.arange(500)
    for records, block in ((41, 1), (41, 8), (100, 64), (7, 3)):
        assert records_at(positions, records=records, seed=3, shuffle=True, block=block,
                          window=1).tolist() == previous_records_at(
            positions, records=records, seed=3, block=block).tolist()


def test_a_window_scatters_the_records_of_whole_blocks():
    records, block, window = 103, 4, 5  # windows of 20 positions; the tail (3) in the last
    stream = records_at(np.arange(2 * records), records=records, seed=2, shuffle=True,
                        block=block, window=window)
    for epoch in (stream[:records], stream[records:]):
        for start in range(0, records, block * window):
            here = epoch[start:start + block * window]
            blocks = np.unique(here // block)
            # every block of the window whole, and nothing else
            assert sorted(here.tolist()) == [r for b in blocks.tolist()
                                             for r in range(b * block,
                                                            min((b + 1) * block, records))]
            assert len(blocks) == len(here) // block + (len(here) % block > 0)
        assert set(epoch[100:].tolist()) <= set(epoch[80:].tolist())
        assert 100 in epoch[80:]  # the tail stays in the last window
    first = stream[:20]
    assert (np.diff(first) != 1).sum() > 10  # neighbours scattered, not runs
    assert stream[:20].tolist() != stream[records:records + 20].tolist()  # another epoch


def test_a_windowed_order_reaches_the_same_step_on_any_ranks(tmp_path):
    data = numbered_dataset(tmp_path)
    reference = rank_steps(data, ranks=1, batch=12, steps=8, block=4, window=3)
    for ranks in (2, 3, 4):
        assert rank_steps(data, ranks=ranks, batch=12, steps=8, block=4,
                          window=3) == reference, ranks
    stream = sum(reference, [])
    assert stream == records_at(np.arange(96), records=41, seed=3, shuffle=True, block=4,
                                window=3).tolist()
    assert sum(rank_steps(data, ranks=3, batch=6, steps=6, start=36, block=4, window=3),
               []) == stream[36:72]


def test_the_block_cache_fetches_each_block_once(tmp_path):
    numbered_dataset(tmp_path / "d")
    memory = fsspec.filesystem("memory")
    _copy(tmp_path / "d", lambda name, data: memory.pipe(f"/block-cache/{name}", data))
    data = manifest.load("memory://block-cache")
    source = RecordSource(paths=data.shard_paths(), counts=SIZES, frame_bytes=(
        memory.size(data.shard_paths()[0]) // SIZES[0]))
    cache = BlockCache(source=source, block=4, capacity=6)
    stream = records_at(np.arange(41), records=41, seed=1, shuffle=True, block=4, window=3)
    for start in range(0, 41, 5):  # each window's 3 blocks fetched once, read in 5-record calls
        records = stream[start:start + 5]
        np.testing.assert_array_equal(cache.read(records), source.read(records))
    assert cache.fetched == 11  # 10 blocks and the tail
    cache.read(stream[:12])
    assert cache.fetched == 14  # 6 blocks are kept, the last used: window 0's had gone


def test_calls_in_flight_share_a_fetch():
    class SlowSource:
        records, frame_bytes, reads = 40, 2, []

        def read(self, records):
            self.reads.append(records.tolist())
            time.sleep(0.2)  # the other calls arrive while this fetch runs
            return np.repeat(records[:, None], 2, axis=1).astype(np.uint8)

    cache = BlockCache(source=SlowSource(), block=8, capacity=5)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(cache.read, [np.array([3, 9]), np.array([10, 2]), np.array([1])]))
    assert [rows[:, 0].tolist() for rows in got] == [[3, 9], [10, 2], [1]]
    assert cache.fetched == 2 and sorted(sum(SlowSource.reads, [])) == list(range(16))


def test_the_block_cache_keeps_no_more_than_its_capacity():
    class Source:
        records, frame_bytes = 4096, 10

        def read(self, records):
            return np.zeros((len(records), self.frame_bytes), dtype=np.uint8)

    def owner(array):  # the buffer an array keeps alive
        while array.base is not None:
            array = array.base
        return array

    block, window, batch, ranks = 8, 16, 128, 4
    cache = BlockCache(source=Source(), block=block, capacity=2 * window)
    worst = 0
    for step in range(200):  # rank 0's share of each step: a few records of many blocks
        positions = step * batch + np.arange(batch // ranks)
        cache.read(records_at(positions, records=4096, seed=1, shuffle=True, block=block,
                              window=window))
        held = {id(owner(frames)): owner(frames).nbytes for frames in cache._blocks.values()}
        worst = max(worst, sum(held.values()))
    assert cache.fetched > 2 * window  # blocks were evicted
    assert worst <= 2 * window * block * Source.frame_bytes  # capacity blocks, as documented


def test_read_amplification():
    assert expected_amplification(block=64, window=1, batch=32, ranks=8) == 1.0
    assert expected_amplification(block=32, window=64, batch=512, ranks=1) == 1.0
    assert expected_amplification(block=32, window=64, batch=512, ranks=4) == pytest.approx(
        4 * (1 - 0.75 ** 32))  # every rank reads every block of every window
    assert expected_amplification(block=4, window=2, batch=512, ranks=4) == 1.0  # 8 records
    assert expected_amplification(block=32, window=64, batch=512, ranks=64) < 32


def test_records_at_is_manifest_order_without_shuffling():
    assert records_at(np.arange(8, 13), records=10, seed=0, shuffle=False).tolist() == [
        8, 9, 0, 1, 2]


def test_labels_segments_and_an_unshuffled_read(tmp_path):
    data = numbered_dataset(tmp_path, with_segments=True)
    context = tf.distribute.InputContext(1, 0, 1)
    plan = plan_global(dataset=data, context=context, global_batch_size=4)
    dataset = make_global_dataset(plan=plan, spec=data.record_spec, seed=0, shuffle=False,
                                  use_segments=True, start=39)
    inputs, labels = next(iter(dataset))
    assert record_ids(inputs[TOKENS].numpy()) == [39, 40, 0, 1]
    np.testing.assert_array_equal(inputs[TOKENS][2], [4, 4, 1, 1])
    np.testing.assert_array_equal(labels[2], [4, 1, 1, 1])
    np.testing.assert_array_equal(inputs[SEGMENT_IDS][2], [1, 1, 1, 2])  # a new one after EOS
    assert labels.dtype == tf.int32


def test_too_large_a_batch_names_the_flag(tmp_path):
    data = numbered_dataset(tmp_path)
    with pytest.raises(ValueError, match="--global_batch_size 42 is more than the 41"):
        plan_global(dataset=data, context=tf.distribute.InputContext(1, 0, 1),
                    global_batch_size=42)
    with pytest.raises(ValueError, match="not divisible by the 4 replicas"):
        plan_global(dataset=data, context=tf.distribute.InputContext(2, 0, 4),
                    global_batch_size=6)


def _copy(directory, put):
    for name in sorted(os.listdir(directory)):
        put(name, (directory / name).read_bytes())


def test_memory_and_s3_shards_give_the_same_steps(tmp_path, s3):
    numbered_dataset(tmp_path / "d")
    memory = fsspec.filesystem("memory")
    _copy(tmp_path / "d", lambda name, data: memory.pipe(f"/global-order/{name}", data))
    _copy(tmp_path / "d", lambda name, data: s3.put(f"global/{name}", data))
    for order in ({}, {"block": 4, "window": 3}):  # the second reads whole blocks, kept
        local = rank_steps(manifest.load(str(tmp_path / "d")), ranks=2, batch=8, steps=6,
                           **order)
        assert rank_steps(manifest.load("memory://global-order"), ranks=2, batch=8, steps=6,
                          **order) == local
        assert rank_steps(manifest.load(s3.url("global/manifest.json")), ranks=2, batch=8,
                          steps=6, **order) == local


def test_a_corrupt_record_is_named(tmp_path):
    data = numbered_dataset(tmp_path, sizes=[4])
    path = data.shard_paths()[0]
    with open(path, "r+b") as handle:  # a byte of record 2's values
        size = os.path.getsize(path) // 4
        handle.seek(2 * size + size - 8)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 1]))
    plan = plan_global(dataset=data, context=tf.distribute.InputContext(1, 0, 1),
                       global_batch_size=4)
    dataset = make_global_dataset(plan=plan, spec=data.record_spec, seed=0, shuffle=False)
    with pytest.raises(tf.errors.OpError, match=r"record 2 \(global 2\).*checksum mismatch"):
        next(iter(dataset))
