"""The portable protocol, as on a Flink or Spark cluster, without one: the pipeline goes to
Beam's job service over gRPC as a Runner API proto, and its DoFns are unpickled and run in SDK
worker processes started by a separate worker pool (``tests.portable``). What it writes --
shards, tokenizer, dead letters, document hashes, manifest -- is byte-identical to the
DirectRunner's, also when it trains the tokenizer, deduplicates, decontaminates against an
evaluation set, or loses a worker process mid-run and is rerun."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from common import storage
from datagen.contamination import make_corpus
from datagen.pile_files import pile_doc, write_jsonl, write_jsonl_zst
from pipeline import run
from tests.pipeline.conftest import tiny_text
from tests.portable import REPO, kill_workers, service_env
from tests.robustness.helpers import comparable, load

# Small records, chunks and shards: a few dozen parts and shards from ~100 KB of text.
ARGS = ["--seq_len=16", "--shard_bytes=65536", "--chunk_bytes=4000", "--encode_processes=1",
        "--split=train", "--max_bad_fraction=0.1"]
DUPLICATES = 12  # documents planted a second time, in the other file


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> pathlib.Path:
    """A zstd file (two frames, one broken line) and a plain one, two subsets, and
    ``DUPLICATES`` documents of the first file repeated in the second."""
    root = tmp_path_factory.mktemp("portable-in")
    docs = [pile_doc(f"{i}: " + tiny_text(3000 + i, 80 + i % 120), ("A", "B")[i % 2])
            for i in range(360)]
    first, second = docs[:240], docs[240:] + docs[5:5 + DUPLICATES]
    write_jsonl_zst(root / "00.jsonl.zst", first[:100] + [b'{"text": "broken'] + first[100:],
                    frames=2)
    write_jsonl(root / "01.jsonl", second)
    return root


@pytest.fixture(scope="module")
def given_model_reference(corpus, tiny_model, tmp_path_factory) -> pathlib.Path:
    """The DirectRunner's dataset of ``corpus`` with ``tiny_model``."""
    out = tmp_path_factory.mktemp("portable-ref") / "train"
    assert run.main(["--input", str(corpus), "--tokenizer_model", str(tiny_model), *ARGS,
                     "--output", str(out), "--runner=DirectRunner"]) == 0
    return out


def _files(directory: pathlib.Path) -> dict[str, bytes]:
    """Every file of a dataset but its manifest (compared through ``comparable``)."""
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != "manifest.json"}


def _comparable(doc: dict) -> dict:
    doc = comparable(doc)
    if doc.get("quality"):
        doc["quality"].pop("prepass_seconds")  # a timing
    return doc


def assert_same_dataset(out: pathlib.Path, reference: pathlib.Path) -> None:
    assert _comparable(load(out)) == _comparable(load(reference))
    files = _files(reference)
    assert _files(out) == files  # shards, tokenizer, dead letters, doc hashes: same bytes
    assert any(name.startswith("dead_letters/") for name in files)


def _run(*args, output: pathlib.Path, beam_args: list[str]) -> int:
    return run.main([*map(str, args), *ARGS, "--output", str(output), *beam_args])


def test_given_tokenizer_same_bytes_as_direct_runner(corpus, tiny_model, given_model_reference,
                                                     portable, tmp_path, capsys):
    out = tmp_path / "train"
    assert _run("--input", corpus, "--tokenizer_model", tiny_model, output=out,
                beam_args=portable.beam_args) == 0, portable.logs()
    assert "tokenized by 1 worker process(es)" in capsys.readouterr().out
    doc = load(out)
    assert doc["accounting"]["rejected"] == {"invalid_json": 1}
    assert len(doc["shards"]) >= 2 and doc["totals"]["documents"] == 360 + DUPLICATES
    assert_same_dataset(out, given_model_reference)


@pytest.mark.parametrize("variant, flags", [
    ("train_tokenizer", ["--vocab_size=300", "--num_threads=1"]),
    ("dedup_exact", ["--dedup=exact"]),
    ("near_all_formats", ["--dedup=near", "--formats=tfrecord,megatron,arrayrecord"]),
])
def test_variant_same_bytes_as_direct_runner(corpus, tiny_model, portable, tmp_path, variant,
                                             flags):
    """The tokenizer-training path (a Beam pipeline draws the sample, SentencePiece trains on
    it) and exact deduplication (a pre-pass over the input, then the planted duplicates
    filtered) give the same dataset through the job service as in-process."""
    model = [] if variant == "train_tokenizer" else ["--tokenizer_model", tiny_model]
    outputs = {}
    for name, beam_args in (("direct", ["--runner=DirectRunner"]),
                            ("portable", portable.beam_args)):
        outputs[name] = tmp_path / name / "train"
        assert _run("--input", corpus, *model, *flags, output=outputs[name],
                    beam_args=beam_args) == 0, portable.logs()
    doc = load(outputs["portable"])
    if variant == "dedup_exact":
        assert sum(doc["accounting"]["filtered"].values()) == DUPLICATES, doc["accounting"]
    elif variant == "near_all_formats":  # near dedup's rounds, and the extra formats' files
        assert doc["accounting"]["filtered"].get("duplicate") == DUPLICATES, doc["accounting"]
        names = _files(outputs["direct"])
        assert any(n.endswith(".idx") for n in names) and any(
            n.endswith(".array_record") for n in names), sorted(names)
    else:
        assert "trained" in doc["tokenizer"]
    assert_same_dataset(outputs["portable"], outputs["direct"])


PLANTED = 16  # documents holding an evaluation passage


@pytest.fixture(scope="module")
def contaminated(tmp_path_factory) -> pathlib.Path:
    """``PLANTED`` of 64 documents hold an evaluation passage (``datagen.contamination``),
    split over a zstd file (with a broken line) and a plain one; a third, clean file gets an
    empty decision file. The evaluation file lies beside the inputs, in ``eval.jsonl``."""
    made = make_corpus(seed=7, documents=64, passages=8, planted=PLANTED, min_words=13)
    root = tmp_path_factory.mktemp("portable-contaminated")
    docs = [pile_doc(text, ("A", "B")[i % 2]) for i, text in enumerate(made.documents)]
    (root / "in").mkdir()
    write_jsonl_zst(root / "in" / "00.jsonl.zst", docs[:20] + [b'{"text": "broken'] + docs[20:40],
                    frames=2)
    write_jsonl(root / "in" / "01.jsonl", docs[40:])
    write_jsonl(root / "in" / "02.jsonl", [pile_doc(tiny_text(i, 60)) for i in range(8)])
    write_jsonl(root / "eval.jsonl", [{"text": text} for text in made.passages])
    return root


@pytest.mark.parametrize("mode", ["drop", "redact"])
def test_decontaminate_same_bytes_as_direct_runner(contaminated, tiny_model, portable, tmp_path,
                                                   mode):
    """``--decontaminate`` (the pre-pass scans for evaluation n-grams, then the main pipeline
    drops or cuts what it found) gives the same dataset through the job service as in-process,
    and finds every planted passage."""
    outputs = {}
    for name, beam_args in (("direct", ["--runner=DirectRunner"]),
                            ("portable", portable.beam_args)):
        outputs[name] = tmp_path / name / "train"
        assert _run("--input", contaminated / "in", "--tokenizer_model", tiny_model,
                    "--decontaminate", contaminated / "eval.jsonl",
                    f"--decontaminate_mode={mode}", output=outputs[name],
                    beam_args=beam_args) == 0, portable.logs()
    doc = load(outputs["portable"])
    subsets = doc["quality"]["decontamination"]["subsets"]
    counted = {what: sum(row[what] for row in subsets.values())
               for what in ("documents_dropped", "documents_redacted", "spans")}
    if mode == "drop":
        assert doc["accounting"]["filtered"] == {"decontaminated": PLANTED}, doc["accounting"]
        assert counted == {"documents_dropped": PLANTED, "documents_redacted": 0, "spans": 0}
    else:
        assert doc["accounting"]["filtered"] == {}, doc["accounting"]
        assert counted == {"documents_dropped": 0, "documents_redacted": PLANTED,
                           "spans": PLANTED}
    assert_same_dataset(outputs["portable"], outputs["direct"])


def _committed_parts(out: pathlib.Path) -> list[pathlib.Path]:
    try:
        return [p for p in (out / ".parts").iterdir() if storage.TMP_MARKER not in p.name]
    except FileNotFoundError:
        return []


@pytest.mark.slow
def test_worker_killed_mid_run_fails_cleanly_then_rerun_is_identical(
        corpus, tiny_model, given_model_reference, portable, tmp_path):
    """An SDK worker process SIGKILLed (as by the out-of-memory killer) once the first parts
    are committed: the run exits 2 with one error line and no manifest; the same command run
    again writes what the DirectRunner writes."""
    args = ["--input", str(corpus), "--tokenizer_model", str(tiny_model), *ARGS,
            "--output", str(tmp_path / "train"), *portable.beam_args]
    log = tmp_path / "killed.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "pipeline.run", *args], cwd=REPO,
                                   env=service_env(), stdout=sink, stderr=subprocess.STDOUT)

    def first_part_committed() -> bool:
        assert process.poll() is None, "the run ended before a part was committed"
        return bool(_committed_parts(tmp_path / "train"))

    try:
        killed = kill_workers(portable, when=first_part_committed)
        status = process.wait(timeout=120)
    finally:
        process.kill()
        process.wait()
    output = log.read_text(errors="replace")
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert status == 2 and len(errors) == 1, output
    assert "worker process died" in errors[0], output
    assert not (tmp_path / "train" / "manifest.json").exists()
    print(f"killed worker(s) {killed} with {len(_committed_parts(tmp_path / 'train'))} parts "
          "committed")

    assert run.main(args) == 0, portable.logs()
    assert_same_dataset(tmp_path / "train", given_model_reference)
    assert not (tmp_path / "train" / ".parts").exists()


def test_bad_record_refused_in_one_line(portable, tmp_path, tiny_model, capsys):
    """A PilepackError raised in an SDK worker reaches the launcher through the job service as
    one ``error:`` line and exit status 2, as under the DirectRunner."""
    write_jsonl(tmp_path / "in.jsonl", [pile_doc(tiny_text(i, 20)) for i in range(5)]
                + [b'{"text": "broken'])
    assert _run("--input", tmp_path / "in.jsonl", "--tokenizer_model", tiny_model,
                "--on_bad_record=fail", output=tmp_path / "train",
                beam_args=portable.beam_args) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "in.jsonl line 6" in errors[0] and "invalid_json" in errors[0]
    assert "Traceback" not in err, err
    assert not (tmp_path / "train" / "manifest.json").exists()
