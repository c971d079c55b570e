"""progress.py: sidecars add up to documents, text, tokens and the input consumed; a run shows
its progress (log lines off a terminal)."""

import logging

from pipeline import run
from pipeline.write import progress
from pipeline.write.progress import Tally, Watcher, write_sidecar


def test_tally_adds_counts_and_takes_the_furthest_offset_per_file():
    tally = Tally(total_input_bytes=1000)
    for row in ({"file": 0, "offset": 300, "documents": 3, "text_bytes": 900, "tokens": 200},
                {"file": 0, "offset": 100, "documents": 1, "text_bytes": 300, "tokens": 70},
                {"file": 1, "offset": 200, "documents": 2, "text_bytes": 600, "tokens": 150}):
        tally.add(row)
    assert (tally.documents, tally.text_bytes, tally.tokens) == (6, 1800, 420)
    assert tally.consumed == 500 and tally.fraction == 0.5
    line = tally.line(10.0)
    assert line.startswith("50.0% of the input (0.0 of 0.0 MB compressed): 6 documents")
    assert "ETA 0m10s" in line


def test_watcher_reads_each_sidecar_once(tmp_path):
    parts = tmp_path / ".parts"
    write_sidecar(str(tmp_path), ".parts/00000-0000000.tfrecords", file_index=0,
                  input_offset=40, documents=2, text_bytes=10, tokens=5)
    watcher = Watcher(output=str(tmp_path), split="t", total_input_bytes=80, tty=False)
    watcher.poll()
    watcher.poll()
    assert (watcher.tally.documents, watcher.tally.fraction) == (2, 0.5)
    assert sorted(p.name for p in parts.iterdir()) == ["00000-0000000.tfrecords.progress.json"]


def test_a_run_logs_its_progress(tiny_input, tiny_model, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    monkeypatch.setattr(progress, "POLL_S", {"local": 0.02, "object_store": 0.02})
    caplog.set_level(logging.INFO, logger="pilepack.progress")
    out = tmp_path / "out"
    assert run.main(["--input", str(tiny_input["dir"]), "--output", str(out),
                     "--tokenizer_model", str(tiny_model), "--seq_len=16", "--chunk_bytes=1024",
                     "--encode_processes=1", "--max_bad_fraction=0.5"]) == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "pilepack.progress"]
    assert lines and all("% of the input" in line and "documents" in line for line in lines)
