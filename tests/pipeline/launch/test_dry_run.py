"""``--dry_run`` (pipeline/launch/dry_run.py, pipeline/launch/dry_run_sample.py): exact on inputs it reads
to the end, close on the rest, Beam's worker options read, nothing written."""

import pytest

from datagen.pile_files import pile_doc, write_jsonl_zst
from pipeline import run
from pipeline.config import PipelineConfig, ReadConfig
from pipeline.launch import dry_run, dry_run_sample
from pipeline.read.inputs import expand_inputs
from schemas import manifest
from tests.pipeline.conftest import tiny_text


@pytest.mark.parametrize("machine_type, cores", [
    ("n2-standard-8", 8), ("n1-highmem-16", 16), ("c3-standard-22-lssd", 22),
    ("custom-8-32768", 8), ("n2-custom-4-16384", 4), ("e2-medium", None),
    ("m5.2xlarge", None), (None, None),
])
def test_machine_cores_from_the_machine_type(machine_type, cores):
    assert dry_run.machine_cores(machine_type) == cores


def test_sampled_files_are_evenly_spaced():
    assert dry_run_sample.sampled_indices(30, most=4) == [0, 10, 19, 29]
    assert dry_run_sample.sampled_indices(3, most=16) == [0, 1, 2]


def test_dry_run_of_inputs_read_to_the_end_equals_the_real_run(tiny_input, tiny_dataset,
                                                               tiny_model, tmp_path, capsys):
    """The tiny split's files are shorter than the sample, so every figure is exact: text,
    documents, tokens, records, shards and bytes equal what the real run's manifest says."""
    out = tmp_path / "never" / "train"
    assert run.main(["--input", str(tiny_input["dir"]), "--output", str(out), "--dry_run",
                     "--tokenizer_model", str(tiny_model), "--seq_len=16", "--chunk_bytes=2000",
                     "--runner=DirectRunner"]) == 0
    printed = capsys.readouterr().out
    assert not out.parent.exists()  # wrote nothing
    assert "[train] dry run: 2 input file(s)" in printed and "(2 to their end)" in printed
    assert "measured per subset: A " in printed and "core-hours" in printed

    config = PipelineConfig(input=str(tiny_input["dir"]), tokenizer_model=str(tiny_model),
                            seq_len=16, read=ReadConfig(chunk_bytes=2000))
    est = dry_run.dry_run_split(config, ["--runner=DirectRunner"])
    doc = manifest.load(str(tiny_dataset)).doc
    totals = doc["totals"]
    assert (est.text_bytes, est.documents) == (totals["text_bytes"], doc["accounting"]["written"])
    assert (est.tokens, est.records) == (totals["tokens"], totals["records"])
    assert (est.shards, est.output_bytes) == (totals["shards"], totals["bytes"])
    assert set(est.bytes_per_token) == {"A", "B"}


def test_a_file_longer_than_the_sample_is_extrapolated(tmp_path):
    docs = [pile_doc(tiny_text(i, 200 + i % 50), ("A", "B")[i % 2]) for i in range(600)]
    path = write_jsonl_zst(tmp_path / "00.jsonl.zst", docs, frames=3)
    true_text = sum(len(d["text"].encode()) for d in docs)
    (file,) = expand_inputs(path)
    sample = dry_run_sample.sample_file(file, config=ReadConfig(), text_bytes=true_text // 10)
    assert not sample.complete and sample.text_bytes < true_text / 5
    config = PipelineConfig(input=path, seq_len=64)
    cluster = dry_run.Cluster(runner="DirectRunner", workers=2, cores_per_worker=1, source="",
                              fanout=True)
    est = dry_run.estimate([sample], inputs=[file], config=config, vocab_size=8192,
                           cluster=cluster, tokenized=False)
    assert est.text_bytes == pytest.approx(true_text, rel=0.1)
    assert est.documents == pytest.approx(len(docs), rel=0.1)
    assumed = true_text / dry_run_sample.ASSUMED_BYTES_PER_TOKEN
    assert est.tokens == pytest.approx(assumed + len(docs), rel=0.1)
    assert est.bytes_per_token == {}  # assumed, not measured
    assert est.core_hours == pytest.approx(est.text_bytes / 1e6 / 3600
                                           / dry_run.TEXT_MB_PER_CORE_SECOND["auto"])
    slower = dry_run.estimate([sample], inputs=[file], cluster=cluster, tokenized=False,
                              config=PipelineConfig(input=path, encoder="sentencepiece"),
                              vocab_size=8192)
    assert slower.core_hours > est.core_hours


def test_workers_and_cores_come_from_beams_options(tiny_input, capsys):
    argv = ["--input", str(tiny_input["dir"]), "--dry_run", "--runner=DataflowRunner",
            "--num_workers=10", "--machine_type=n2-standard-8", "--seq_len=16"]
    assert run.main(argv) == 0
    printed = capsys.readouterr().out
    assert "on 10 worker(s) x 8 core(s)" in printed and "--machine_type=n2-standard-8" in printed
    assert "DataflowRunner, fan-out on" in printed
    assert "ASSUMED 4.0 text bytes per document token" in printed  # no --tokenizer_model

    config = PipelineConfig(dry_run=True, dry_run_cores_per_worker=4)
    cluster = dry_run.cluster_from_options(config, ["--runner=FlinkRunner", "--num_workers=3"])
    assert (cluster.workers, cluster.cores_per_worker, cluster.fanout) == (3, 4, True)
    local = dry_run.cluster_from_options(PipelineConfig(), ["--runner=DirectRunner"])
    assert (local.workers, local.fanout) == (1, False)  # in-memory: fan-out off, encoder pool
    multi = dry_run.cluster_from_options(PipelineConfig(), [
        "--runner=DirectRunner", "--direct_running_mode=multi_processing",
        "--direct_num_workers=2"])
    assert (multi.workers, multi.cores_per_worker, multi.fanout) == (2, 1, True)
