"""``python -m pipeline.verify --manifest PATH [--deep]``: check a dataset end to end.

The command; the library is ``pipeline.dataset.verify``."""

from __future__ import annotations

import dataclasses
import sys

from common import cli
from common.flags import ArgumentParser, add_flags, flag, from_args
from pipeline.dataset.verify import Report, verify


@dataclasses.dataclass(frozen=True)
class VerifyFlags:
    manifest: str = flag(help="manifest.json or its directory")
    deep: bool = flag(False, help="also parse every record")


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m pipeline.verify", description=__doc__.split("\n")[0])
    add_flags(parser, VerifyFlags)
    flags = from_args(VerifyFlags, parser.parse_args(argv))
    cli.quiet_tensorflow(errors_too=True)  # TensorFlow only parses records here
    return cli.run_main(lambda: _report(verify(flags.manifest, deep=flags.deep), deep=flags.deep))


def _report(report: Report, *, deep: bool) -> int:
    for note in report.notes:
        print(f"NOTE {note}")
    for problem in report.problems:
        print(f"PROBLEM {problem}")
    status = "OK" if report.ok else f"{len(report.problems)} PROBLEM(S)"
    print(f"{status}: {report.shards} shards, {report.records} records checked"
          f"{' (deep)' if deep else ''}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
