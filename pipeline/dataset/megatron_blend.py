"""Megatron's ``--data-path`` blend over the pairs of one or more datasets (the library behind
the command ``pipeline.megatron_paths``).

Each pair is weighted by its tokens, so Megatron's blend draws from every pair in proportion to
its size: the split's own mixture (``--subset_weights``/``--subset_tokens`` are already written
as document copies). Pairs hold the input's subsets as they come; to weight subsets at training
time instead, make one split per subset (``--include_subsets=NAME``) and scale each manifest's
weights (``scale``: the subset's share of the blend, e.g. 2.0 to draw it twice as often).
"""

from __future__ import annotations

from collections.abc import Sequence

from common import storage
from common.errors import ConfigError
from schemas import manifest as manifest_lib


def data_path(datasets: Sequence[manifest_lib.Dataset], *,
              scales: Sequence[float] | None = None) -> list[str]:
    """``[weight, prefix, weight, prefix, ...]`` over every pair of ``datasets``, in order."""
    scales = scales or [1.0] * len(datasets)
    words = []
    for dataset, scale in zip(datasets, scales, strict=True):
        section = dataset.doc.get("megatron")
        if not section:
            raise ConfigError(f"{dataset.manifest_path}: no Megatron files (written without "
                              "--formats=tfrecord,megatron); rebuild it with that flag")
        for pair in section["files"]:
            weight = pair["tokens"] * scale
            words += [f"{weight:g}" if scale != 1.0 else str(pair["tokens"]),
                      storage.join(dataset.directory, pair["prefix"])]
    return words
