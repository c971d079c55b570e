"""progress.py: sidecars add up to documents, text, tokens and the input bytes of the chunks
finished, in whatever order they finish; a run shows its progress (log lines off a terminal)."""

import logging
import random

import pytest

from pipeline import run
from pipeline.write import progress
from pipeline.write.progress import Tally, Watcher, write_sidecar

# Two input files of 1000 and 600 compressed bytes, cut into chunks: (file, start, end).
CHUNKS = [(0, 0, 100), (0, 100, 400), (0, 400, 700), (0, 700, 1000), (1, 0, 600)]


def _row(file, start, end):
    return {"file": file, "input_bytes": end - start, "documents": 1, "text_bytes": 10,
            "tokens": 3}


def test_tally_adds_counts_and_the_input_bytes_of_finished_chunks():
    tally = Tally(total_input_bytes=2000)
    for chunk in CHUNKS[:3]:
        tally.add(_row(*chunk))
    assert (tally.documents, tally.text_bytes, tally.tokens) == (3, 30, 9)
    assert tally.consumed == 700 and tally.fraction == 0.35
    line = tally.line(7.0)
    assert line.startswith("35.0% of the input (0.0 of 0.0 MB compressed): 3 documents")
    assert "ETA 0m13s" in line


@pytest.mark.parametrize("seed", range(5))
def test_progress_is_the_work_finished_whatever_order_chunks_finish_in(seed):
    # A fan-out lets late chunks finish first: the last chunk of file 0 alone is 300 of 1600
    # bytes (18.75%), not "file 0 read to its end" (62.5%).
    order = CHUNKS[:]
    random.Random(seed).shuffle(order)
    tally, done, seen = Tally(total_input_bytes=1600), 0, []
    for chunk in order:
        tally.add(_row(*chunk))
        done += chunk[2] - chunk[1]
        assert tally.consumed == done
        seen.append(tally.fraction)
    assert seen == sorted(seen) and seen[-1] == 1.0
    last_first = Tally(total_input_bytes=1600)
    last_first.add(_row(*CHUNKS[3]))
    assert last_first.fraction == 300 / 1600


def test_a_row_missing_a_field_adds_nothing():
    tally = Tally(total_input_bytes=100)
    with pytest.raises(KeyError):
        tally.add({"file": 0, "offset": 50, "documents": 2, "text_bytes": 10, "tokens": 5})
    assert (tally.documents, tally.text_bytes, tally.tokens, tally.consumed) == (0, 0, 0, 0)


def test_watcher_reads_each_sidecar_once_in_any_order(tmp_path):
    parts = tmp_path / ".parts"
    watcher = Watcher(output=str(tmp_path), split="t", total_input_bytes=1600, tty=False)
    for n in (3, 0):  # the last chunk of file 0 first
        file, start, end = CHUNKS[n]
        write_sidecar(str(tmp_path), f".parts/{file:05d}-{n:07d}.tfrecords", file_index=file,
                      input_bytes=end - start, documents=2, text_bytes=10, tokens=5)
        watcher.poll()
        watcher.poll()
    assert (watcher.tally.documents, watcher.tally.consumed) == (4, 400)
    assert sorted(p.name for p in parts.iterdir()) == [
        "00000-0000000.tfrecords.progress.json", "00000-0000003.tfrecords.progress.json"]


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
