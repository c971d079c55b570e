"""The built-in sample behind a run without ``--input``, or one line saying how to do without it.

Its splits (``builtin_splits``: train, then val) are listed here once, for the run
(``pipeline.run.run_sample``) and for the dry run (``pipeline.launch.dry_run.estimate``).

``datagen.sample`` builds it; like all of ``datagen/`` it is part of a checkout of the
repository, not of the installed package (a wheel, a worker image), so it is imported here, in
the launching process, only when a run without ``--input`` needs it.
"""

from __future__ import annotations

import dataclasses

from common.errors import ConfigError

SAMPLE_OUTPUT = "output/sample"  # the splits' root without --output
SPLITS = ("train", "val")  # train first: a run trains the tokenizer there, and val uses it


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


@dataclasses.dataclass(frozen=True)
class SampleSplit:
    name: str
    paths: tuple[str, ...]

    @property
    def input(self) -> str:
        """The split's files as ``--input`` takes them."""
        return ",".join(self.paths)


def builtin_splits() -> tuple[SampleSplit, SampleSplit]:
    """The built-in sample's splits (``SPLITS``), built on first use.

    Raises:
        SampleUnavailable: as ``ensure_builtin_sample``.
    """
    sample = ensure_builtin_sample()
    train, val = SPLITS
    return (SampleSplit(name=train, paths=tuple(sample.train_paths)),
            SampleSplit(name=val, paths=(sample.val_path,)))
