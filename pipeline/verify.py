"""``python -m pipeline.verify --manifest PATH [--deep]``: check a dataset end to end.

The command; the library is ``pipeline.dataset.verify``."""

from __future__ import annotations

import sys

from common import cli
from common.flags import ArgumentParser
from pipeline.dataset.verify import Report, verify


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m pipeline.verify", description=__doc__.split("\n")[0])
    parser.add_argument("--manifest", required=True, help="manifest.json or its directory")
    parser.add_argument("--deep", action="store_true", help="also parse every record")
    args = parser.parse_args(argv)
    cli.quiet_tensorflow(errors_too=True)  # TensorFlow only parses records here
    return cli.run_main(lambda: _report(verify(args.manifest, deep=args.deep), deep=args.deep))


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
