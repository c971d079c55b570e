"""``python -m trainer.generate`` and ``python -m trainer.export`` (in-process ``main``)."""

import json
import os

import pytest
import tensorflow as tf

from trainer import generate
from trainer.export import __main__ as export_cli

PROMPTS = ["Hello, world", "import os\n"]  # a comma: --prompt repeats, it does not split


def completions(capsys, *argv):
    assert generate.main([*argv, *(f"--prompt={p}" for p in PROMPTS)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_the_export_and_the_run_give_the_same_greedy_completions(capsys, export_dir, run_dir):
    from_export = completions(capsys, f"--export_dir={export_dir}", "--max_new_tokens=12")
    assert [row["prompt"] for row in from_export] == PROMPTS
    assert all(row["completion"] and 1 <= row["tokens"] <= 12 for row in from_export)
    assert completions(capsys, f"--model_dir={run_dir}", "--max_new_tokens=12") == from_export


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--prompt=x"], "exactly one of --model_dir and --export_dir"),
        (["--prompt=x", "--model_dir=a", "--export_dir=b"], "exactly one of"),
        (["--prompt=x", "--export_dir=b", "--top_p=0"], "--top_p must be in (0, 1]"),
        (["--prompt=x", "--export_dir=/nonexistent"], "no saved_model.pb"),
        (["--prompt=x", "--model_dir=/nonexistent"], "no run.json"),
    ],
)
def test_bad_flags_are_one_error_line(capsys, argv, message):
    assert generate.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_export_cli_writes_serving_defaults(capsys, run_dir, tmp_path):
    stale = tmp_path / "saved_model" / "1"
    stale.mkdir(parents=True)
    (stale / "stale_file").write_text("from an earlier export")
    argv = [f"--model_dir={run_dir}", f"--export_dir={tmp_path}", "--max_new_tokens=3"]
    assert export_cli.main(argv) == 0
    path = capsys.readouterr().out.strip()
    assert path == str(stale) and os.listdir(stale) != [] and not (stale / "stale_file").exists()
    out = tf.saved_model.load(path).signatures["serving_default"](prompts=tf.constant(PROMPTS))
    assert out["num_tokens"].numpy().tolist() == [3, 3]
