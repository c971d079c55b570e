"""Shared helpers of the robustness tests: generated text, pipeline runs, reading results."""

from __future__ import annotations

import copy
import json
import os
import pathlib
import random
import resource
import subprocess
import sys
import time

from pipeline import run
from pipeline.dataset import reader
from schemas import manifest as manifest_lib

REPO = pathlib.Path(__file__).resolve().parents[2]
# Small records and shards: every run writes several shards in well under a second.
SMALL = ["--seq_len=64", "--shard_bytes=65536", "--chunk_bytes=20000"]

_WORDS = (
    "the of and to in is was for on as with by he at from that his it an were are which this "
    "be or has had first one their its new after but who not they have her she two been other "
    "when there all during into school time may years more most only over city some world "
    "would where later up such used many can state about national out known university "
    "united then made def return import class self value print range len None True False "
    "x = y + 1 ( ) : , . ; [ ] { } # \" ' 0 1 2 3 42 3.14 -- Ünïcödé café 日本語 🙂"
).split()


def text(seed: int, words: int) -> str:
    """Deterministic pseudo-random prose of ``words`` words, with line breaks."""
    rng = random.Random(seed)
    out = []
    for i in range(words):
        out.append(rng.choice(_WORDS))
        out.append("\n" if i % 17 == 16 else " ")
    return "".join(out).strip()


def run_inprocess(*args) -> int:
    """``python -m pipeline.run ARGS`` in this process (DirectRunner); its exit code."""
    return run.main([*map(str, args), "--runner=DirectRunner"])


def python_module(module: str, *args, env: dict | None = None,
                  timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m module ARGS`` in a subprocess from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)], cwd=REPO, env=child_env(env),
        capture_output=True, text=True, timeout=timeout,
    )


def child_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def run_measured(argv: list[str], *, env: dict | None = None,
                 timeout: float = 300) -> tuple[int, str, float]:
    """Run a command; return (exit code, stdout+stderr, peak RSS of the child in MiB)."""
    log = REPO / ".pytest_cache" / f"measured-{os.getpid()}-{time.monotonic_ns()}.log"
    log.parent.mkdir(exist_ok=True)
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, cwd=REPO, env=child_env(env), stdout=out,
                                   stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
                raise TimeoutError(f"{argv} ran over {timeout} s")
            time.sleep(0.05)
    output = log.read_text(errors="replace")
    log.unlink()
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, output, usage.ru_maxrss / 1024  # Linux: KiB


def self_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(out) -> dict:
    return manifest_lib.load(str(out)).doc


def dead_letters(out) -> list[dict]:
    """Every dead letter written next to the manifest, in file order."""
    doc = load(out)
    letters = []
    for entry in doc["dead_letters"]:
        lines = (pathlib.Path(out) / entry["path"]).read_text().splitlines()
        assert len(lines) == entry["records"], entry
        letters += [json.loads(line) for line in lines]
    return letters


def documents_by_file(out) -> dict[int, list[str]]:
    """Decoded text of every document written, per input file index (from the manifest's
    per-input document counts: the shards hold the documents in input order)."""
    from tokenizer.encoder import load_model_bytes, processor_from_bytes

    dataset = manifest_lib.load(str(out))
    sp = processor_from_bytes(load_model_bytes(dataset.tokenizer_path))
    texts = [sp.decode(ids.tolist()) for ids in reader.iter_documents(dataset)]
    result: dict[int, list[str]] = {}
    for index, entry in enumerate(dataset.doc["inputs"]):  # documents come in input order
        if entry["documents"]:
            result[index], texts = texts[:entry["documents"]], texts[entry["documents"]:]
    assert not texts, f"{len(texts)} documents more than the inputs' counts"
    return result


def comparable(doc: dict) -> dict:
    """A manifest without what legitimately differs between two runs of the same input."""
    doc = copy.deepcopy(doc)
    doc.pop("created")
    doc.pop("run_id", None)
    doc["config"].pop("output")
    doc["config"].pop("input")
    for entry in doc["inputs"]:
        entry["path"] = entry["path"].rsplit("/", 1)[-1]
    # Where the tokenizer came from (trained here, or given): its sha256 still has to match.
    doc["tokenizer"].pop("trained", None)
    doc["config"].pop("tokenizer_model")
    # What a rerun reused of a dead run's work (the bytes are the same either way).
    doc.pop("resume", None)
    doc["config"].pop("resume", None)
    return doc
