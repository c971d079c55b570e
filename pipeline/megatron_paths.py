"""``python -m pipeline.megatron_paths MANIFEST [MANIFEST ...] [--scale S ...]``: print
Megatron's ``--data-path`` for the datasets' Megatron pairs, each weighted by its tokens
(``pipeline.dataset.megatron_blend``; docs/formats.md)."""

from __future__ import annotations

import shlex
import sys

from common import cli
from common.errors import ConfigError
from common.flags import ArgumentParser
from pipeline.dataset.megatron_blend import data_path
from schemas import manifest as manifest_lib


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m pipeline.megatron_paths",
                            description=__doc__.split("\n")[0])
    parser.add_argument("manifests", nargs="+", help="manifest.json files or their directories")
    parser.add_argument("--scale", type=float, nargs="+", default=None,
                        help="one factor per manifest multiplying its pairs' weights "
                             "(e.g. one split per subset, each drawn in its own share)")
    args = parser.parse_args(argv)

    def _print() -> int:
        if args.scale is not None and len(args.scale) != len(args.manifests):
            raise ConfigError(f"--scale needs one factor per manifest ({len(args.manifests)}), "
                              f"got {len(args.scale)}")
        datasets = [manifest_lib.load(path, check_files=False) for path in args.manifests]
        print(" ".join(["--data-path", *map(shlex.quote, data_path(datasets,
                                                                      scales=args.scale))]))
        return 0

    return cli.run_main(_print)


if __name__ == "__main__":
    sys.exit(main())
