"""Export a training run for serving: ``python -m trainer.export --model_dir=runs/tiny``.

Training already writes ``export/saved_model/1`` at its end; this writes it again from the
run's newest checkpoint, for example with other ``serving_default`` options
(``--temperature=0.8 --top_p=0.95``) or into another ``--export_dir``. Prints the path.
"""

from __future__ import annotations

import dataclasses
import sys

from common import cli, storage
from common.flags import ArgumentParser, add_flags, flag, from_args
from trainer.export.options import GenerationOptions


@dataclasses.dataclass(frozen=True)
class ExportFlags:
    """Everything ``python -m trainer.export`` accepts."""

    model_dir: str = flag(help="a trainer.train run directory")
    export_dir: str | None = flag(
        None, help="write EXPORT_DIR/saved_model/1 (default: the run's export/)"
    )
    train_manifest: str | None = flag(
        None, help="the training manifest, if it moved since training"
    )
    options: GenerationOptions = dataclasses.field(default_factory=GenerationOptions)


def run(flags: ExportFlags) -> None:
    cli.quiet_tensorflow()
    from trainer import checkpoint
    from trainer.export import from_run, saved_model

    loaded = from_run.load(flags.model_dir, train_manifest=flags.train_manifest)
    servable = saved_model.Servable(
        model=loaded.model,
        tokenizer_proto=loaded.tokenizer_proto,
        eos_id=loaded.eos_id,
        defaults=flags.options,
    )
    export_dir = flags.export_dir or storage.join(flags.model_dir, checkpoint.EXPORT_DIR)
    print(saved_model.write(servable, export_dir=export_dir))


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m trainer.export", description=__doc__)
    add_flags(parser, ExportFlags)
    args = parser.parse_args(argv)
    return cli.run_main(lambda: run(from_args(ExportFlags, args)))


if __name__ == "__main__":
    sys.exit(main())
