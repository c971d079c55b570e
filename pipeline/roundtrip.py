"""``python -m pipeline.roundtrip --manifest PATH``: decode a split and compare with its input.

The command; the library is ``pipeline.dataset.roundtrip``."""

from __future__ import annotations

import sys

from common import cli
from common.flags import ArgumentParser
from pipeline.dataset.roundtrip import RoundTrip, check
from tokenizer.backends import ENCODER_CHOICES


def main(argv=None) -> int:
    parser = ArgumentParser(prog="python -m pipeline.roundtrip",
                            description=__doc__.split("\n")[0])
    parser.add_argument("--manifest", required=True, help="manifest.json or its directory")
    parser.add_argument("--check_ids", action="store_true",
                        help="also compare every document's ids with the documented encoding: "
                             "SentencePieceProcessor.encode, a literal U+2581 as its 3 byte pieces")
    parser.add_argument("--encoder", default="sentencepiece",
                        choices=ENCODER_CHOICES,
                        help="what computes the documented encoding for --check_ids: the "
                             "SentencePiece library itself (default) or another backend")
    args = parser.parse_args(argv)
    cli.quiet_tensorflow(errors_too=True)  # TensorFlow only parses records here
    return cli.run_main(lambda: _report(check(args.manifest, check_ids=args.check_ids,
                                              encoder=args.encoder)))


def _report(result: RoundTrip) -> int:
    for problem in result.mismatches:
        print(f"MISMATCH {problem}")
    print(f"{'OK' if not result.mismatches else 'FAILED'}: {result.documents} documents "
          f"decoded and compared with the input ({result.lossy} equal but for U+2581 -> space)")
    return 0 if not result.mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
