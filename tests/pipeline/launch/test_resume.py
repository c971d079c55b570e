"""resume.py: the fingerprint changes with whatever shapes a run's bytes (an option, an input's
size or version, the tokenizer) and with nothing else; the summary line says what was reused."""

import dataclasses

from pipeline.config import PipelineConfig
from pipeline.launch.resume import LAUNCH_ONLY, reuse_line, run_fingerprint
from pipeline.quality.plan import QualityPlan
from pipeline.read.inputs import InputFile

CONFIG = PipelineConfig(input="in/*.jsonl.zst", output="out")
INPUTS = (InputFile(0, "/in/00.jsonl.zst", 100, "1700000000.0"),
          InputFile(1, "/in/01.jsonl.zst", 200, "1700000001.0"))


def _fingerprint(config=CONFIG, inputs=INPUTS, tokenizer="t" * 64) -> str:
    return run_fingerprint(config=config, inputs=inputs, plan=QualityPlan(),
                           tokenizer_sha256=tokenizer)


def test_the_same_run_has_the_same_fingerprint():
    assert _fingerprint() == _fingerprint() and len(_fingerprint()) == 64


def test_an_option_an_input_or_the_tokenizer_changes_it():
    changed = [
        dataclasses.replace(CONFIG, seq_len=128),
        dataclasses.replace(CONFIG, encoder_check_every=7),
    ]
    assert all(_fingerprint(config=c) != _fingerprint() for c in changed)
    assert _fingerprint(inputs=(INPUTS[0], dataclasses.replace(INPUTS[1], bytes=201))) \
        != _fingerprint()
    assert _fingerprint(inputs=(INPUTS[0], dataclasses.replace(INPUTS[1], version="2"))) \
        != _fingerprint()
    assert _fingerprint(tokenizer="u" * 64) != _fingerprint()


def test_launch_only_options_keep_it():
    assert {"resume", "overwrite", "fanout"} <= set(LAUNCH_ONLY)
    for config in (dataclasses.replace(CONFIG, resume=False),
                   dataclasses.replace(CONFIG, overwrite=True),
                   dataclasses.replace(CONFIG, encode_processes=3)):
        assert _fingerprint(config=config) == _fingerprint()


def test_an_input_of_unknown_version_reuses_nothing():
    assert _fingerprint(inputs=(INPUTS[0], dataclasses.replace(INPUTS[1], version=""))) == ""


def test_the_summary_says_what_was_reused():
    doc = {"resume": {"parts_reused": 3, "parts_total": 9, "prepass_reused": True,
                      "tokenizer_reused": False}}
    assert reuse_line(doc) == ("resume: reused 3 of 9 chunk(s) a dead run committed; quality "
                               "pre-pass reused; tokenizer not reused")
    nothing = {"resume": {"parts_reused": 0, "parts_total": 9, "prepass_reused": False,
                          "tokenizer_reused": False}}
    assert reuse_line(nothing) == "" and reuse_line({}) == ""


def test_overwrite_starts_clean_as_no_resume_does():
    from pipeline import run

    def resume(*flags) -> bool:
        return run.parse(["--input=in.jsonl.zst", "--output=out", *flags])[0].resume

    assert resume() is True
    assert resume("--no-resume") is False and resume("--overwrite") is False
