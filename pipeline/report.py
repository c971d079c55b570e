"""``python -m pipeline.report --manifest M --output DIR``: a dataset report people look at.

The command; the library is ``pipeline.dataset.report``."""

from __future__ import annotations

import dataclasses
import sys

from common import cli
from common.flags import ArgumentParser, add_flags, flag, from_args
from pipeline.dataset.report import write_report


@dataclasses.dataclass(frozen=True)
class ReportFlags:
    manifest: str = flag(help="manifest.json or its directory (local or s3://)")
    output: str = flag(help="directory for index.html and the PNG charts (local or s3://)")


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m pipeline.report", description=__doc__.split("\n")[0])
    add_flags(parser, ReportFlags)
    flags = from_args(ReportFlags, parser.parse_args(argv))
    return cli.run_main(lambda: print(
        "wrote " + write_report(manifest=flags.manifest, output=flags.output)))


if __name__ == "__main__":
    sys.exit(main())
