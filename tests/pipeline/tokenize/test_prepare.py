"""prepare.py: training a tokenizer into --output removes only pilepack's own sample files from
``tokenizer_sample/``; a user's files there are neither read nor removed."""

import json

from pipeline.config import ReadConfig, TokenizerTrainingConfig
from pipeline.read.inputs import expand_inputs
from pipeline.tokenize.prepare import SAMPLE_DIR, train_on_input
from pipeline.tokenize.training_sample import write_sample_file

PROSE = (
    "The river runs past the old mill and under the stone bridge, where children throw "
    "pebbles into the water on summer evenings. In the autumn the leaves gather along the "
    "banks, and the miller's family rakes them into heaps that smell of rain and smoke."
)


def test_a_users_files_in_the_sample_directory_survive_training(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"text": f"{PROSE} ({i})"}) + "\n" for i in range(40)))
    out = tmp_path / "out"
    sample = out / SAMPLE_DIR
    sample.mkdir(parents=True)
    users = {"mine.txt": "the user's notes", "sample-notes.jsonl": "not a sample file"}
    for name, text in users.items():
        (sample / name).write_text(text)
    # A killed run's sample file, of an input this run does not have: removed, not trained on.
    write_sample_file([(0.0, "stale", "zzzz " * 50)], directory=str(sample), file_index=7)
    record = train_on_input(inputs=expand_inputs(str(source)), input_desc=str(source),
                            output=str(out), read=ReadConfig(),
                            training=TokenizerTrainingConfig(vocab_size=300),
                            beam_args=["--runner=DirectRunner"])
    assert sorted(p.name for p in sample.iterdir()) == sorted(users)
    for name, text in users.items():
        assert (sample / name).read_text() == text
    assert record["sample_bytes_by_subset"].keys() == {"(unknown)"}  # not "stale"
    assert (out / "tokenizer.model").exists()


def test_the_sample_directory_goes_once_pilepacks_files_are_removed(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"text": f"{PROSE} [{i}]"}) + "\n" for i in range(40)))
    out = tmp_path / "out"
    train_on_input(inputs=expand_inputs(str(source)), input_desc=str(source), output=str(out),
                   read=ReadConfig(), training=TokenizerTrainingConfig(vocab_size=300),
                   beam_args=["--runner=DirectRunner"])
    assert not (out / SAMPLE_DIR).exists()
