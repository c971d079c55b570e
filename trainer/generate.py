r"""Complete prompts with a trained GPT: ``python -m trainer.generate``.

    python -m trainer.generate --export_dir=runs/tiny/export/saved_model --prompt='def main(' \
        --prompt='The river' [--max_new_tokens=64 --temperature=0.8 --top_k=40 --top_p=0.95]
    python -m trainer.generate --model_dir=runs/tiny --prompt='def main('

``--export_dir`` runs the exported SavedModel's ``generate`` signature (what a server runs);
``--model_dir`` rebuilds a training run from its newest checkpoint and the tokenizer of its
training data, and decodes with the same graph code, so it works during training too. Prints
one JSON line per prompt: ``{"prompt": ..., "completion": ..., "tokens": N}`` (new tokens).
"""

from __future__ import annotations

import dataclasses
import json
import sys

from common import cli
from common.errors import ConfigError
from common.flags import ArgumentParser, add_flags, flag, from_args
from trainer.export.options import GenerationOptions

PROMPT_HELP = "a prompt to complete; repeat the flag for several"


@dataclasses.dataclass(frozen=True)
class GenerateFlags:
    """Everything ``python -m trainer.generate`` accepts (``--prompt`` repeats)."""

    prompt: tuple[str, ...] = flag(help=PROMPT_HELP)
    model_dir: str | None = flag(None, help="a trainer.train run: its newest checkpoint")
    export_dir: str | None = flag(
        None, help="an export: a run's export/saved_model, or one version directory of it"
    )
    train_manifest: str | None = flag(
        None, help="with --model_dir: the training manifest, if it moved since training"
    )
    options: GenerationOptions = dataclasses.field(default_factory=GenerationOptions)

    def __post_init__(self):
        if (self.model_dir is None) == (self.export_dir is None):
            raise ConfigError("give exactly one of --model_dir and --export_dir")
        if self.train_manifest and not self.model_dir:
            raise ConfigError("--train_manifest goes with --model_dir, not --export_dir")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m trainer.generate", description=__doc__)
    # Repeatable, so a prompt may hold commas (a tuple flag would split it at them).
    parser.add_argument("--prompt", action="append", required=True, help=PROMPT_HELP)
    add_flags(parser, GenerateFlags, skip=("prompt",))
    return parser


def _generate_fn(flags: GenerateFlags):
    """The ``generate`` function of the export or of the run (same inputs and outputs)."""
    import tensorflow as tf

    from trainer.export import from_run, saved_model

    if flags.export_dir:
        return tf.saved_model.load(saved_model.resolve(flags.export_dir)).signatures["generate"]
    run = from_run.load(flags.model_dir, train_manifest=flags.train_manifest)
    servable = saved_model.Servable(
        model=run.model, tokenizer_proto=run.tokenizer_proto, eos_id=run.eos_id
    )
    return servable.generate


def generate(flags: GenerateFlags) -> list[dict]:
    """One ``{"prompt", "completion", "tokens"}`` per ``flags.prompt``, in order."""
    import tensorflow as tf

    fn, o = _generate_fn(flags), flags.options
    out = fn(
        prompts=tf.constant(flags.prompt, tf.string),
        max_new_tokens=tf.constant(o.max_new_tokens, tf.int32),
        temperature=tf.constant(o.temperature, tf.float32),
        top_k=tf.constant(o.top_k, tf.int32),
        top_p=tf.constant(o.top_p, tf.float32),
        seed=tf.constant(o.seed, tf.int64),
    )
    return [
        {"prompt": prompt, "completion": completion.decode("utf-8", "replace"), "tokens": int(n)}
        for prompt, completion, n in zip(
            flags.prompt, out["completions"].numpy(), out["num_tokens"].numpy()
        )
    ]


def run(flags: GenerateFlags) -> None:
    cli.quiet_tensorflow()
    for row in generate(flags):
        print(json.dumps(row, ensure_ascii=False))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return cli.run_main(lambda: run(from_args(GenerateFlags, args)))


if __name__ == "__main__":
    sys.exit(main())
