"""``python -m pipeline.megatron_paths MANIFEST [MANIFEST ...] [--scale S ...]``: print
Megatron's ``--data-path`` for the datasets' Megatron pairs, each weighted by its tokens
(``pipeline.dataset.megatron_blend``; docs/formats.md)."""

from __future__ import annotations

import dataclasses
import shlex
import sys

from common import cli
from common.errors import ConfigError
from common.flags import ArgumentParser, add_flags, flag, from_args
from pipeline.dataset.megatron_blend import data_path
from schemas import manifest as manifest_lib


@dataclasses.dataclass(frozen=True)
class MegatronPathsFlags:
    manifests: tuple[str, ...] = flag(help="manifest.json files or their directories",
                                      positional=True)
    scale: tuple[float, ...] | None = flag(
        None, nargs="+", help="one factor per manifest multiplying its pairs' weights (e.g. one "
                              "split per subset, each drawn in its own share)")

    def __post_init__(self):
        if self.scale is not None and len(self.scale) != len(self.manifests):
            raise ConfigError(f"--scale needs one factor per manifest ({len(self.manifests)}), "
                              f"got {len(self.scale)}")


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m pipeline.megatron_paths",
                            description=__doc__.split("\n")[0])
    add_flags(parser, MegatronPathsFlags)
    args = parser.parse_args(argv)

    def _print() -> int:
        flags = from_args(MegatronPathsFlags, args)  # a --scale of another length: exit 2
        datasets = [manifest_lib.load(path, check_files=False) for path in flags.manifests]
        print(" ".join(["--data-path", *map(shlex.quote, data_path(datasets,
                                                                      scales=flags.scale))]))
        return 0

    return cli.run_main(_print)


if __name__ == "__main__":
    sys.exit(main())
