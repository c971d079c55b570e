"""The built-in sample behind a run without ``--input``, or one line saying how to do without it.

``datagen.sample`` builds it; like all of ``datagen/`` it is part of a checkout of the
repository, not of the installed package (a wheel, a worker image), so it is imported here, in
the launching process, only when a run without ``--input`` needs it.
"""

from __future__ import annotations

from common.errors import ConfigError


class SampleUnavailable(ConfigError):
    """No ``--input`` was given and this installation cannot build the built-in sample."""


def ensure_builtin_sample():
    """The built-in sample's files (``datagen.sample.files.SampleFiles``), built on first use.

    Raises:
        SampleUnavailable: ``datagen`` cannot be imported (pilepack installed, not checked out).
    """
    try:
        from datagen.sample.cache import ensure_sample
    except ModuleNotFoundError as err:
        if err.name != "datagen" and not (err.name or "").startswith("datagen."):
            raise  # datagen is there but something it needs is not: a broken install
        raise SampleUnavailable(
            "without --input, pilepack runs on its built-in sample, which only a checkout of "
            "the repository can build (its datagen/ is not part of an installed pilepack); "
            "pass --input=FILES (Pile .jsonl.zst files or a glob), or run from a checkout"
        ) from None
    return ensure_sample()
