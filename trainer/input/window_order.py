"""The record at each stream position of ``--order=global``: a two-level permutation.

Records (numbered in manifest order) form blocks of ``K = --order_block`` neighbours, block
``b`` being records ``[b*K, (b+1)*K)``; the ``N mod K`` records after the last whole block form
the *tail* block. In epoch ``e`` a seeded Feistel bijection ``sigma_e`` of the ``N // K`` whole
blocks (``schemas.permutation``, keyed ``order:{seed}:{e}``) lines them up in *slots*, the tail
block last. Slots are cut into *windows* of ``W = --order_window`` slots, so window ``j`` holds
positions ``[j*W*K, min((j+1)*W*K, N))`` of the epoch, and a second bijection ``tau_{e,j}`` of
those positions (keyed ``order:{seed}:{e}:window:{j}``) scatters the window's records over them:

    offset o = p - j*W*K  ->  q = tau_{e,j}(o)  ->  slot s = j*W + q // K, record in it q % K
    record = sigma_e(s) * K + q % K      (s < N // K: a whole block)
           = (N // K) * K + q % K        (s = N // K: the tail, only in the last window)

Each step is a bijection (the last window holds exactly the slots left, tail included, so
``q`` names a record that exists), hence the whole is a bijection of ``[0, N)`` per epoch,
computed on the fly in O(1) memory. Any ``W*K`` consecutive positions of a window come from
``W`` blocks drawn at random from the whole split, in random order: a reader fetches each
block with one request and keeps the window's blocks (``trainer.input.block_cache``).

``W = 1`` keeps each block's records in order (``tau`` is the identity): blocks move whole,
the order ``--order_block`` gave alone, and with ``K = 1`` too, one record-level permutation.

Worked example: N = 10, K = 2, W = 2: blocks {0,1} {2,3} {4,5} {6,7}, no tail; windows are
positions 0-3 and 4-7 and 8-9 (slots 0-1, 2-3, 4). If sigma = (3, 0, 2, 1), window 0 holds
records {6, 7, 0, 1} in tau_0's order, window 1 records {4, 5, 2, 3}, window 2 records {8, 9}.
"""

from __future__ import annotations

import functools

import numpy as np

from schemas.permutation import Permutation


@functools.lru_cache(maxsize=8)
def _blocks(count: int, seed: int, epoch: int) -> Permutation:
    return Permutation(n=count, seed=f"order:{seed}:{epoch}")


@functools.lru_cache(maxsize=64)
def _window(size: int, seed: int, epoch: int, window: int) -> Permutation:
    return Permutation(n=size, seed=f"order:{seed}:{epoch}:window:{window}")


def _epoch_records(within: np.ndarray, *, records: int, seed: int, epoch: int, block: int,
                   window: int) -> np.ndarray:
    """Epoch ``epoch``'s records at positions ``within`` (each in ``[0, records)``)."""
    whole = records // block
    span = window * block  # positions per window
    if window == 1:
        slot, offset = np.divmod(within, block)
    else:
        index, offset = np.divmod(within, span)
        for j in np.unique(index).tolist():
            here = index == j
            size = min(span, records - j * span)
            offset[here] = _window(size, seed, epoch, j).forward(offset[here])
        slot, offset = np.divmod(offset, block)
        slot += index * window
    out = slot * block + offset  # the tail's slot is its own block
    moved = slot < whole
    out[moved] = _blocks(whole, seed, epoch).forward(slot[moved]) * block + offset[moved]
    return out


def records_at(
    positions: np.ndarray,
    *,
    records: int,
    seed: int,
    shuffle: bool,
    block: int = 1,
    window: int = 1,
) -> np.ndarray:
    """Global record indexes at stream ``positions`` (int64, same shape), epoch after epoch.

    Position ``g`` is in epoch ``g // records``; without ``shuffle``, it holds record
    ``g mod records`` (manifest order). See the module docstring for ``block`` and ``window``.
    """
    positions = np.asarray(positions, dtype=np.int64)
    epochs, within = np.divmod(positions.reshape(-1), records)
    if not shuffle:
        return within.reshape(positions.shape)
    out = np.empty_like(within)
    for epoch in np.unique(epochs).tolist():
        here = epochs == epoch
        out[here] = _epoch_records(within[here], records=records, seed=seed, epoch=epoch,
                                   block=block, window=window)
    return out.reshape(positions.shape)


def window_positions(*, records: int, block: int, window: int) -> int:
    """Positions per window (the last window of an epoch may hold fewer)."""
    return min(records, block * window)


def expected_amplification(*, block: int, window: int, batch: int, ranks: int) -> float:
    """Bytes the ranks read together over the split's bytes (>= 1), when each rank keeps the
    blocks its records of the current window need (``trainer.input.block_cache``).

    A window of ``W*K`` positions meets the slices of ``s = min(R, max(1, W*K*R/B))`` ranks
    (rank ``r`` reads positions ``[r*B/R, (r+1)*B/R)`` of each step); each of them needs a
    random ``1/s`` of the window's records, so touches a given block of ``K`` with probability
    ``1 - (1 - 1/s)^K`` and reads it whole: ``s * (1 - (1 - 1/s)^K)``, at most ``min(s, K)``.
    With ``W = 1`` blocks keep their order and a rank reads only its own runs: 1.
    """
    if window == 1 or ranks == 1:
        return 1.0
    sharing = min(float(ranks), max(1.0, window * block * ranks / batch))
    return sharing * (1.0 - (1.0 - 1.0 / sharing) ** block)
