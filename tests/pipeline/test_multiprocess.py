"""Real multi-process execution: the DirectRunner's ``multi_processing`` mode with two worker
processes, on ONE input file. The work is spread over both workers (fan-out after Read), and
what they write is byte-identical to the in-process run; the tokenizer sample, and so the
tokenizer, does not depend on the number of workers either."""

import pathlib

import pytest

from datagen.pile_files import pile_doc, write_jsonl_gz, write_jsonl_zst
from pipeline import run, train_tokenizer
from schemas import manifest
from tests.pipeline.conftest import tiny_text
from tests.robustness.helpers import comparable

TWO_WORKERS = ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
               "--direct_num_workers=2"]
# Small records, shards and chunks: ~30 chunks, several shards cut across chunks.
SMALL = ["--seq_len=16", "--shard_bytes=65536", "--chunk_bytes=4000", "--encode_processes=1",
         "--split=train"]


@pytest.fixture(scope="module")
def one_file(tmp_path_factory) -> pathlib.Path:
    """One zstd file (two frames): 320 documents of two subsets and two bad lines."""
    docs = [pile_doc(f"{i}: " + tiny_text(1000 + i, 60 + i % 90), ("A", "B")[i % 2])
            for i in range(320)]
    lines = docs[:40] + [b'{"text": "broken'] + docs[40:250] + [b'{"text": 7}'] + docs[250:]
    return pathlib.Path(write_jsonl_zst(tmp_path_factory.mktemp("one") / "00.jsonl.zst", lines,
                                        frames=2))


def _files(directory: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != "manifest.json"}


def test_two_workers_share_one_file_and_write_what_one_process_writes(one_file, tiny_model,
                                                                      tmp_path, capsys):
    common = ["--input", str(one_file), "--tokenizer_model", str(tiny_model), *SMALL]
    assert run.main([*common, "--output", str(tmp_path / "one"), "--runner=DirectRunner"]) == 0
    assert "tokenized by 1 worker process(es)" in capsys.readouterr().out
    assert run.main([*common, "--output", str(tmp_path / "two"), *TWO_WORKERS]) == 0
    assert "tokenized by 2 worker process(es)" in capsys.readouterr().out

    one, two = manifest.load(str(tmp_path / "one")).doc, manifest.load(str(tmp_path / "two")).doc
    assert len(one["shards"]) >= 3 and one["totals"]["documents"] == 320
    assert one["accounting"]["rejected"] == {"invalid_json": 1, "text_not_string": 1}
    assert comparable(two) == comparable(one)
    files = _files(tmp_path / "one")
    assert _files(tmp_path / "two") == files  # shards, dead letters, tokenizer: same bytes
    assert not (tmp_path / "two" / ".parts").exists()


def test_tokenizer_trained_under_two_workers_is_identical(tmp_path):
    """Three files, so both workers draw sample pieces; a sample budget below the input's
    size, so the stratified draw (priorities against inclusion rates) decides what is kept."""
    src = tmp_path / "in"
    src.mkdir()
    for n, subset in enumerate(("A", "B", "C")):
        docs = [pile_doc(tiny_text(100 * n + i, 40 + i), subset) for i in range(60)]
        write_jsonl_zst(src / f"{n:02d}.jsonl.zst", docs)
    write_jsonl_gz(src / "03.jsonl.gz", [pile_doc(tiny_text(500 + i, 30), "D") for i in range(30)])
    models = []
    for name, beam_args in (("one", ["--runner=DirectRunner"]), ("two", TWO_WORKERS)):
        out = tmp_path / name
        assert train_tokenizer.main(["--input", str(src), "--output_dir", str(out),
                                     "--vocab_size=300", "--tokenizer_sample_bytes=30000",
                                     "--num_threads=1", *beam_args]) == 0
        models.append((out / "tokenizer.model").read_bytes())
    assert models[0] == models[1]


def test_filters_remove_and_record_the_same_documents_with_two_workers(tiny_model, tmp_path):
    """--filters on one file of real prose and planted documents (Pile-CC and Github): the
    same shards, filter records and counts from one process and from two workers."""
    from datagen.filter_plants import clean_documents, plant

    clean = clean_documents(count=60, seed=5)
    rules = ("c4_curly_bracket", "gopher_dup_line_frac", "fineweb_list_ratio", "gopher_min_words")
    docs = [pile_doc(plant(rules[i % 4], text) if i % 3 == 0 else text,
                     ("Pile-CC", "Github")[i % 2]) for i, text in enumerate(clean)]
    (tmp_path / "in").mkdir()
    path = write_jsonl_zst(tmp_path / "in" / "00.jsonl.zst", docs, frames=2)
    common = ["--input", str(path), "--tokenizer_model", str(tiny_model), *SMALL,
              "--filters=gopher,c4,fineweb"]
    assert run.main([*common, "--output", str(tmp_path / "one"), "--runner=DirectRunner"]) == 0
    assert run.main([*common, "--output", str(tmp_path / "two"), *TWO_WORKERS]) == 0

    one, two = manifest.load(str(tmp_path / "one")).doc, manifest.load(str(tmp_path / "two")).doc
    assert comparable(two) == comparable(one)
    # every third document planted, half of them Pile-CC (every rule), half Github (none)
    # documents 0, 6, 12, ... (Pile-CC, every 6th): their plants cycle through 0, 2, 0, 2 ...
    assert one["filters"]["removed"] == {"c4_curly_bracket": {"Pile-CC": 5},
                                         "fineweb_list_ratio": {"Pile-CC": 5}}
    assert one["filters"]["documents_removed"] == 10 == sum(
        f["records"] for f in one["filters"]["records"])
    assert _files(tmp_path / "two") == _files(tmp_path / "one")
    assert any(p.startswith("dead_letters/filtered/") for p in _files(tmp_path / "one"))
