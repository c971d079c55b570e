"""trainer/export/saved_model.py: the export training writes, loaded in a fresh process with
plain TensorFlow and tensorflow_text only (no pilepack import), as a server loads it."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from trainer.export import saved_model

PROMPTS = ["The", "def main(argv):\n    ", "In 1990, the city of"]

# Runs in a fresh interpreter: TensorFlow and tensorflow_text only.
FRESH_PROCESS = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer's ops, as TF Serving links them in

export = tf.saved_model.load(sys.argv[1])
prompts = tf.constant(json.loads(sys.argv[2]))
greedy = export.signatures["serving_default"](prompts=prompts)
sampled = export.signatures["generate"](
    prompts=prompts, max_new_tokens=tf.constant(8), temperature=tf.constant(0.9),
    top_k=tf.constant(40), top_p=tf.constant(0.95), seed=tf.constant(1, tf.int64))
logits = export.signatures["logits"](token_ids=tf.constant([[1, 300, 301, 302]]))["logits"]
plain = lambda out: {k: [v.decode() if isinstance(v, bytes) else int(v) for v in t.numpy()]
                     for k, t in out.items()}
ours = ("common", "schemas", "tokenizer", "pipeline", "trainer", "datagen")
print(json.dumps({
    "signatures": sorted(export.signatures),
    "greedy": plain(greedy),
    "sampled": plain(sampled),
    "logits": logits.numpy().tolist(),
    "project_modules": sorted(m for m in sys.modules if m.split(".")[0] in ours),
}))
"""


@pytest.fixture(scope="module")
def fresh(export_dir, tmp_path_factory):
    """What FRESH_PROCESS printed for the run's export (outside the repository)."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, export_dir + "/1", json.dumps(PROMPTS)],
        check=False,
        cwd=tmp_path_factory.mktemp("elsewhere"),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_training_writes_the_export_beside_model_keras(run_dir):
    export = os.path.join(run_dir, "export")
    assert sorted(os.listdir(export)) == ["model.keras", "saved_model"]
    assert os.listdir(os.path.join(export, "saved_model")) == ["1"]  # no partial write left
    for name in ("saved_model.pb", "variables/variables.index"):
        assert os.path.exists(os.path.join(export, "saved_model", "1", name)), name


def test_a_fresh_process_completes_prompts_without_pilepack(fresh):
    assert fresh["project_modules"] == []
    assert fresh["signatures"] == ["generate", "logits", "serving_default"]
    for out, most in ((fresh["greedy"], 64), (fresh["sampled"], 8)):
        for prompt, completion, text, n in zip(
            PROMPTS, out["completions"], out["texts"], out["num_tokens"]
        ):
            assert text == prompt + completion and completion  # a continuation of the prompt
            assert 1 <= n <= most
    assert fresh["sampled"]["completions"] != fresh["greedy"]["completions"]


def test_the_logits_signature_is_the_trained_model(fresh, trained_run):
    expected = trained_run.model(np.array([[1, 300, 301, 302]], "int32")).numpy()
    np.testing.assert_allclose(fresh["logits"], expected, atol=1e-5)


def test_resolve_finds_the_newest_version(export_dir, tmp_path):
    assert saved_model.resolve(export_dir) == os.path.join(export_dir, "1")
    assert saved_model.resolve(os.path.join(export_dir, "1")) == os.path.join(export_dir, "1")
    with pytest.raises(FileNotFoundError, match="numbered version directory"):
        saved_model.resolve(str(tmp_path))
