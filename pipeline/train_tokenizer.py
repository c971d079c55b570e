"""``python -m pipeline.train_tokenizer``: train only a tokenizer, on a sample of Pile files.

Draws the same stratified sample the pipeline draws (``pipeline.tokenize.training_sample``) and
trains with the same lossless options (``tokenizer.spec``), so the model can later be applied
with ``python -m pipeline.run --tokenizer_model=...``. Beam's flags pass through.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from common import cli, storage
from common.flags import ArgumentParser, add_flags, flag, from_args
from pipeline.config import ReadConfig, TokenizerTrainingConfig


@dataclasses.dataclass(frozen=True)
class TrainTokenizerConfig:
    input: str = flag(help="glob, directory or comma list of .jsonl.zst/.jsonl/.jsonl.gz files "
                           "(local or s3://)")
    output_dir: str = flag(help="where tokenizer.model and tokenizer.vocab go (local or s3://)")
    training: TokenizerTrainingConfig = dataclasses.field(default_factory=TokenizerTrainingConfig)
    read: ReadConfig = dataclasses.field(default_factory=ReadConfig)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m pipeline.train_tokenizer",
                            description=__doc__.split("\n\n")[0])
    add_flags(parser, TrainTokenizerConfig)
    return parser


def train(config: TrainTokenizerConfig, beam_args: list[str]) -> dict:
    """Sample, train, publish; return the model's manifest entry."""
    from pipeline.read.inputs import expand_inputs
    from pipeline.tokenize.prepare import train_on_input
    from tokenizer.model_info import describe
    from tokenizer.spec import MODEL_FILENAME

    record = train_on_input(inputs=expand_inputs(config.input), input_desc=config.input,
                            output=config.output_dir, read=config.read,
                            training=config.training, beam_args=beam_args)
    info = describe(storage.join(config.output_dir, MODEL_FILENAME), trained=record)
    print(json.dumps(info.manifest_entry(), indent=2))
    print(f"wrote {info.path} (vocab {info.vocab_size}, sha256 {info.sha256[:12]}...)")
    return info.manifest_entry()


def main(argv=None) -> int:
    from pipeline.launch.beam_options import refuse_unknown_args

    parser = build_parser()
    args, beam_args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    refuse_unknown_args(parser, beam_args)
    cli.configure_logging()
    return cli.run_main(lambda: train(from_args(TrainTokenizerConfig, args), beam_args) and 0)


if __name__ == "__main__":
    sys.exit(main())
