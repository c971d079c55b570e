"""``python -m pipeline.roundtrip --manifest PATH``: decode a split and compare with its input.

The command; the library is ``pipeline.dataset.roundtrip``."""

from __future__ import annotations

import dataclasses
import sys

from common import cli
from common.flags import ArgumentParser, add_flags, check_choices, flag, from_args
from pipeline.dataset.roundtrip import RoundTrip, check
from tokenizer.backends import ENCODER_CHOICES


@dataclasses.dataclass(frozen=True)
class RoundTripFlags:
    manifest: str = flag(help="manifest.json or its directory")
    check_ids: bool = flag(
        False, help="also compare every document's ids with the documented encoding: "
                    "SentencePieceProcessor.encode, a literal U+2581 as its 3 byte pieces")
    encoder: str = flag(
        "sentencepiece", choices=ENCODER_CHOICES,
        help="what computes the documented encoding for --check_ids: the SentencePiece "
             "library itself (default) or another backend")

    def __post_init__(self):
        check_choices(self)


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m pipeline.roundtrip",
                            description=__doc__.split("\n")[0])
    add_flags(parser, RoundTripFlags)
    flags = from_args(RoundTripFlags, parser.parse_args(argv))
    cli.quiet_tensorflow(errors_too=True)  # TensorFlow only parses records here
    return cli.run_main(lambda: _report(check(flags.manifest, check_ids=flags.check_ids,
                                              encoder=flags.encoder)))


def _report(result: RoundTrip) -> int:
    for problem in result.mismatches:
        print(f"MISMATCH {problem}")
    print(f"{'OK' if not result.mismatches else 'FAILED'}: {result.documents} documents "
          f"decoded and compared with the input ({result.lossy} equal but for U+2581 -> space)")
    return 0 if not result.mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
