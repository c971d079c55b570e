"""Near dedup's shard counts follow the input size: powers of two, within bounds, growing with
the bytes so that a shard's rows stay about the same."""

from pipeline.quality.shards import (
    BAND_ROWS_PER_SHARD,
    BYTES_PER_DOCUMENT,
    MAX_SHARDS,
    SIGNATURES_PER_SHARD,
    shard_counts,
)


def test_a_small_input_has_one_shard_of_each():
    assert shard_counts(input_bytes=0, bands=16) == (1, 1)
    assert shard_counts(input_bytes=17 * 2**20, bands=16) == (1, 1)


def test_counts_grow_with_the_input_and_bound_each_shard():
    for input_bytes in (10**9, 46 * 10**9, 460 * 10**9):
        band, signature = shard_counts(input_bytes=input_bytes, bands=16)
        documents = input_bytes / BYTES_PER_DOCUMENT
        assert band & (band - 1) == 0 and signature & (signature - 1) == 0
        assert documents * 16 / band <= BAND_ROWS_PER_SHARD < 2 * documents * 16 / band
        assert documents / signature <= SIGNATURES_PER_SHARD < 2 * documents / signature
    assert shard_counts(input_bytes=460 * 10**9, bands=16) == (4096, 4096)
    assert shard_counts(input_bytes=10**18, bands=16) == (MAX_SHARDS, MAX_SHARDS)
