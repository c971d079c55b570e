"""``--dry_run`` (pipeline/launch/dry_run/): exact on inputs it reads to the end (data-quality
options included), close on the rest, the backend the run would use, the rate from the rates
file, Beam's worker options read, nothing written."""

import json
import shutil

import pytest

from common.errors import InputError
from datagen.pile_files import pile_doc, write_jsonl, write_jsonl_zst
from pipeline import run
from pipeline.config import PipelineConfig, QualityConfig, ReadConfig
from pipeline.launch.dry_run import estimate as dry_run
from pipeline.launch.dry_run import rates as dry_run_rates
from pipeline.launch.dry_run import report as dry_run_report
from pipeline.launch.dry_run import sample as dry_run_sample
from pipeline.quality.plan import plan_quality
from pipeline.read.inputs import expand_inputs
from schemas import manifest
from tests.pipeline.conftest import TINY_ARGS, tiny_text

CLUSTER = dry_run.Cluster(runner="DirectRunner", workers=2, cores_per_worker=1, source="",
                          fanout=True)
GIGATOKEN = dry_run.Backend("gigatoken", "test")


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
    documents, tokens, records, shards and bytes equal what the real run's manifest says,
    and the backend it names is the one the run used."""
    out = tmp_path / "never" / "train"
    assert run.main(["--input", str(tiny_input["dir"]), "--output", str(out), "--dry_run",
                     "--tokenizer_model", str(tiny_model), "--seq_len=16", "--chunk_bytes=2000",
                     "--runner=DirectRunner"]) == 0
    printed = capsys.readouterr().out
    assert not out.parent.exists()  # wrote nothing
    assert "[train] dry run: 2 input file(s)" in printed and "(2 to their end)" in printed
    assert "measured per subset: A " in printed and "core-hours" in printed
    assert "what is estimated: text, documents, tokens, records, shards and bytes are counted " \
           "exactly (every input file was read to its end)" in printed

    config = PipelineConfig(input=str(tiny_input["dir"]), tokenizer_model=str(tiny_model),
                            seq_len=16, read=ReadConfig(chunk_bytes=2000))
    est = dry_run.dry_run_split(config, ["--runner=DirectRunner"])
    doc = manifest.load(str(tiny_dataset)).doc
    totals = doc["totals"]
    assert (est.text_bytes, est.documents) == (totals["text_bytes"], doc["accounting"]["written"])
    assert (est.tokens, est.records) == (totals["tokens"], totals["records"])
    assert (est.shards, est.output_bytes) == (totals["shards"], totals["bytes"])
    assert set(est.bytes_per_token) == {"A", "B"}
    assert [b["name"] for b in doc["encoder"]["backends"]] == [est.backend.name]
    assert f"encoder {est.backend.name} (built from --tokenizer_model" in printed


def _mixed_input(directory, *, duplicates: bool) -> str:
    """Two short files of three Pile subsets (the second plain JSON Lines); ``duplicates``:
    every 7th document repeats an earlier one, some across the two files."""
    subsets = ("Wikipedia (en)", "Gutenberg (PG-19)", "Github")
    docs = [pile_doc(tiny_text(300 + i, 8 + i % 37), subsets[i % 3]) for i in range(90)]
    if duplicates:
        for i in range(7, 90, 7):
            docs[i] = docs[i // 2]
    directory.mkdir()
    write_jsonl_zst(directory / "00.jsonl.zst", docs[:50], frames=2)
    write_jsonl(directory / "01.jsonl", docs[50:])
    return str(directory)


def _real_and_dry(input_dir, out, model, flags: list[str]):
    args = ["--input", input_dir, "--tokenizer_model", str(model), *TINY_ARGS, *flags]
    assert run.main(["--output", str(out), *args]) == 0
    config = PipelineConfig(
        input=input_dir, tokenizer_model=str(model), seq_len=16, encode_processes=1,
        read=ReadConfig(chunk_bytes=2000, max_bad_fraction=0.1),
        quality=QualityConfig(**dict(flag.lstrip("-").split("=", 1) for flag in flags)))
    return manifest.load(str(out)).doc, dry_run.dry_run_split(config, ["--runner=DirectRunner"])


def _assert_equals_the_manifest(est, doc):
    totals = doc["totals"]
    assert (est.written_documents, est.written_text_bytes) == (totals["documents"],
                                                               totals["text_bytes"])
    assert (est.tokens, est.records) == (totals["tokens"], totals["records"])
    assert (est.shards, est.output_bytes) == (totals["shards"], totals["bytes"])
    removed = doc["quality"]["removed"]["duplicate"] if doc.get("quality") else {}
    assert est.duplicates == sum(removed.values())
    for name, row in doc["mixture"]["subsets"].items():
        assert est.subsets[name] == pytest.approx(row), name


def test_mixture_and_dedup_on_inputs_read_to_the_end_equal_the_real_run(tiny_model, tmp_path):
    """pile-v1's copies (the run's own draws: seed, file, line) and planted duplicates, dropped
    as the pre-pass drops them: every total and every subset's row equals the manifest's."""
    input_dir = _mixed_input(tmp_path / "in", duplicates=True)
    doc, est = _real_and_dry(input_dir, tmp_path / "train", tiny_model,
                             ["--subset_weights=pile-v1", "--dedup=exact"])
    assert sum(doc["quality"]["removed"]["duplicate"].values()) == 12  # planted
    assert est.written_documents > 1.5 * est.documents  # the copies count
    _assert_equals_the_manifest(est, doc)
    assert est.prepass is not None and est.prepass.core_hours > 0


def test_token_budgets_on_inputs_read_to_the_end_equal_the_real_run(tiny_model, tmp_path):
    input_dir = _mixed_input(tmp_path / "in", duplicates=False)
    doc, est = _real_and_dry(input_dir, tmp_path / "train", tiny_model,
                             ['--subset_tokens={"Github": 900, "Wikipedia (en)": 4000}'])
    assert doc["mixture"]["subsets"]["Github"]["weight"] < 1 < est.weights.weights[
        "Wikipedia (en)"]
    _assert_equals_the_manifest(est, doc)
    assert "--subset_tokens: weight = budget / the subset's tokens, counted" in est.weights.how


def test_a_file_longer_than_the_sample_is_extrapolated(tmp_path):
    docs = [pile_doc(tiny_text(i, 200 + i % 50), ("A", "B")[i % 2]) for i in range(600)]
    path = write_jsonl_zst(tmp_path / "00.jsonl.zst", docs, frames=3)
    true_text = sum(len(d["text"].encode()) for d in docs)
    (file,) = expand_inputs(path)
    sample = dry_run_sample.sample_file(file, config=ReadConfig(), text_bytes=true_text // 10)
    assert not sample.complete and sample.text_bytes < true_text / 5
    config = PipelineConfig(input=path, seq_len=64)
    rate = dry_run_rates.load_rate("gigatoken")
    est = dry_run.estimate([sample], inputs=[file], config=config,
                           plan=plan_quality(config, inputs=[file]), vocab_size=8192,
                           cluster=CLUSTER, tokenized=False, backend=GIGATOKEN, rate=rate)
    assert est.text_bytes == pytest.approx(true_text, rel=0.1)
    assert est.documents == pytest.approx(len(docs), rel=0.1)
    assumed = true_text / dry_run_sample.ASSUMED_BYTES_PER_TOKEN
    assert est.tokens == pytest.approx(assumed + len(docs), rel=0.1)
    assert est.bytes_per_token == {}  # assumed, not measured
    assert est.core_hours == pytest.approx(est.text_bytes / 1e6 / 3600
                                           / rate.text_mb_per_cpu_second)
    weighted_config = PipelineConfig(input=path, seq_len=64,
                                     quality=QualityConfig(subset_weights='{"A": 3, "B": 0.5}'))
    weighted = dry_run.estimate(
        [sample], inputs=[file], cluster=CLUSTER, tokenized=False, backend=GIGATOKEN, rate=rate,
        config=weighted_config, plan=plan_quality(weighted_config, inputs=[file]),
        vocab_size=8192)
    # Expected copies: A and B hold about half the tokens each.
    assert weighted.tokens == pytest.approx(est.tokens * (3 + 0.5) / 2, rel=0.05)
    assert weighted.records == pytest.approx(est.records * (3 + 0.5) / 2, rel=0.05)
    assert weighted.core_hours == est.core_hours  # copies are not tokenized again


def test_planted_duplicates_in_a_longer_file_are_extrapolated(tmp_path):
    """One document in four repeats an earlier one: the sample sees about that share, and
    the estimate extrapolates it to the file."""
    docs = [pile_doc(tiny_text(i, 150 + i % 40), "A") for i in range(800)]
    for i in range(8, 800, 4):
        docs[i] = docs[i - 7]
    path = write_jsonl_zst(tmp_path / "00.jsonl.zst", docs, frames=2)
    true_text = sum(len(d["text"].encode()) for d in docs)
    (file,) = expand_inputs(path)
    sample = dry_run_sample.sample_file(file, config=ReadConfig(), text_bytes=true_text // 8)
    assert not sample.complete
    config = PipelineConfig(input=path, seq_len=64, quality=QualityConfig(dedup="exact"))
    plan = plan_quality(config, inputs=[file])
    est = dry_run.estimate([sample], inputs=[file], config=config, plan=plan, vocab_size=8192,
                           cluster=CLUSTER, tokenized=False, backend=GIGATOKEN,
                           rate=dry_run_rates.load_rate("gigatoken"))
    assert est.duplicates == pytest.approx(198, rel=0.15)
    assert est.written_documents == pytest.approx(800 - 198, rel=0.1)


def test_the_rate_comes_from_the_rates_file(tiny_input, tmp_path, capsys):
    """A changed rates file changes the core-hours, and the output names its benchmark."""
    config = PipelineConfig(input=str(tiny_input["dir"]), seq_len=16)
    before = dry_run.dry_run_split(config, ["--runner=DirectRunner"])
    rates = tmp_path / "rates.json"
    shutil.copy(dry_run_rates.RATES_PATH, rates)
    dry_run_rates.write_rate(
        str(rates), backend=before.backend.name,
        text_mb_per_cpu_second=before.rate.text_mb_per_cpu_second * 4,
        source={"command": "python -m bench.scaling_bench --faster", "corpus": "c", "date": "d"})
    capsys.readouterr()
    after = dry_run.dry_run_split(config, ["--runner=DirectRunner"], rates_path=str(rates))
    assert after.core_hours == pytest.approx(before.core_hours / 4)
    printed = capsys.readouterr().out
    assert f"`python -m bench.scaling_bench --faster` on c, d ({rates})" in printed
    kept = json.loads(rates.read_text())["backends"]
    assert set(kept) == {"gigatoken", "sentencepiece"}  # the other entry is kept
    with pytest.raises(InputError, match="missing.json is missing: the dry run needs the gig"):
        dry_run_rates.load_rate("gigatoken", path=str(tmp_path / "missing.json"))


def test_a_model_gigatoken_cannot_encode_gets_sentencepieces_rate(tiny_input, tmp_path):
    """A unigram model: ``auto`` falls back to sentencepiece, in the run and in the dry run,
    and the dry run uses sentencepiece's (slower) rate."""
    from tokenizer.spec import TrainOptions
    from tokenizer.train import train_from_texts

    model = train_from_texts(texts=tiny_input["texts"] * 4, output_dir=str(tmp_path / "tok"),
                             options=TrainOptions(vocab_size=300, model_type="unigram",
                                                  num_threads=1)).model_path
    out = tmp_path / "train"
    assert run.main(["--input", str(tiny_input["dir"]), "--output", str(out),
                     "--tokenizer_model", model, *TINY_ARGS]) == 0
    used = [b["name"] for b in manifest.load(str(out)).doc["encoder"]["backends"]]
    config = PipelineConfig(input=str(tiny_input["dir"]), tokenizer_model=model, seq_len=16)
    est = dry_run.dry_run_split(config, ["--runner=DirectRunner"])
    assert used == [est.backend.name] == ["sentencepiece"]
    assert "model_type is unigram" in est.backend.how
    assert est.rate.text_mb_per_cpu_second == dry_run_rates.load_rate(
        "sentencepiece").text_mb_per_cpu_second


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


def test_near_dedup_and_decontamination_on_inputs_read_to_the_end_equal_the_real_run(
        tiny_model, tmp_path, capsys):
    """Planted near duplicates and evaluation passages (datagen.quality_sample): the dry run
    finds the same drops per reason, the same pairs and clusters, the same documents per
    evaluation set, and so the same totals as the real run's manifest."""
    from datagen.quality_sample import write_quality_input

    made = write_quality_input(tmp_path / "data", seed=3)
    flags = ["--dedup=near", "--decontaminate=" + ",".join(made.eval_sets)]
    out = tmp_path / "train"
    assert run.main(["--output", str(out), "--input", made.input, "--tokenizer_model",
                     str(tiny_model), *TINY_ARGS, *flags]) == 0
    doc = manifest.load(str(out)).doc
    capsys.readouterr()
    config = PipelineConfig(
        input=made.input, tokenizer_model=str(tiny_model), seq_len=16, encode_processes=1,
        read=ReadConfig(chunk_bytes=2000, max_bad_fraction=0.1),
        quality=QualityConfig(dedup="near", decontaminate=made.eval_sets))
    est = dry_run.dry_run_split(config, ["--runner=DirectRunner"])
    printed = capsys.readouterr().out
    removed, near = doc["quality"]["removed"], doc["quality"]["near_dup"]
    assert sum(removed["near_duplicate"].values()) >= made.triples > 0
    assert sum(removed["decontaminated"].values()) == made.contaminated
    assert est.dropped == {reason: sum(removed[reason].values())
                           for reason in ("decontaminated", "near_duplicate")}
    assert est.drops.near.cluster_sizes == near["cluster_sizes"]
    assert (est.drops.near.candidate_pairs, est.drops.near.verified_pairs) == (
        near["candidate_pairs"], near["verified_pairs"])
    assert est.drops.contamination.per_set == {
        name: row["documents"] for name, row in doc["quality"]["decontamination"][
            "eval_sets"].items()}
    totals = doc["totals"]
    assert (est.written_documents, est.tokens, est.records) == (
        totals["documents"], totals["tokens"], totals["records"])
    assert "near duplicates drop ~ " in printed and "counted as the run counts them" in printed
    assert "sign, scan n-grams" in printed  # the pre-pass's work, timed


def _near_file(path, *, copies_far: bool):
    """120 base documents and 40 near copies (datagen.near_duplicates); each copy right after
    its source, or (``copies_far``) all copies at the end of the file."""
    from datagen.near_duplicates import generate

    texts, pairs = generate(seed=5, documents=160, copy_share=0.25)
    copy_of = {source: copy for source, copy, _, _ in pairs}
    copies = set(copy_of.values())
    order = []
    for i in range(len(texts)):
        if i not in copies:
            order.append(i)
            if not copies_far and i in copy_of:
                order.append(copy_of[i])
    order += sorted(copies) if copies_far else []
    docs = [pile_doc(texts[i], "Pile-CC") for i in order]
    return write_jsonl_zst(path, docs, frames=4), sum(len(d["text"].encode()) for d in docs)


def _near_estimate(path, *, text_bytes: int | None):
    (file,) = expand_inputs(str(path))
    config = PipelineConfig(input=str(path), seq_len=64, quality=QualityConfig(dedup="near"))
    plan = plan_quality(config, inputs=[file])
    checks = dry_run.sample_checks(plan)
    kwargs = {} if text_bytes is None else {"text_bytes": text_bytes}
    sample = dry_run_sample.sample_file(file, config=ReadConfig(), checks=checks, **kwargs)
    assert sample.complete == (text_bytes is None)
    est = dry_run.estimate([sample], inputs=[file], config=config, plan=plan, vocab_size=8192,
                           cluster=CLUSTER, tokenized=False, backend=GIGATOKEN,
                           rate=dry_run_rates.load_rate("gigatoken"))
    return est, dry_run_report.dedup_lines(est)


def test_near_duplicates_in_a_longer_file_are_extrapolated_and_a_lower_bound(tmp_path):
    """The same documents twice: copies next to their sources (a sample of a quarter of the
    text sees about the whole file's share), and copies at the end (the sample sees none: the
    estimate is a lower bound, and says so)."""
    near, far = (_near_file(tmp_path / f"{name}.jsonl.zst", copies_far=name == "far")
                 for name in ("near", "far"))
    truth, _ = _near_estimate(near[0], text_bytes=None)  # read to the end: the run's count
    true_count = truth.dropped["near_duplicate"]
    assert 10 <= true_count <= 40  # the planted copies at Jaccard >= 0.8
    assert _near_estimate(far[0], text_bytes=None)[0].dropped["near_duplicate"] == true_count
    local, lines = _near_estimate(near[0], text_bytes=near[1] // 4)
    assert local.dropped["near_duplicate"] == pytest.approx(true_count, rel=0.5)
    assert "LOWER BOUND" in lines[-1] and "the sample is 2" in lines[-1]
    spread, _ = _near_estimate(far[0], text_bytes=far[1] // 4)
    assert spread.dropped.get("near_duplicate", 0) == 0 < true_count  # never above: a bound


@pytest.mark.parametrize("mode", ["drop", "redact"])
def test_contamination_in_a_longer_file_is_extrapolated(tmp_path, mode):
    """40 of 400 documents hold an evaluation passage, evenly spread: a sample of a quarter of
    the text finds about 40 in the whole file; redacting drops none and redacts them."""
    from datagen.contamination import make_corpus

    corpus = make_corpus(seed=2, documents=400, passages=20, planted=40, min_words=13)
    path = write_jsonl_zst(tmp_path / "00.jsonl.zst",
                           [pile_doc(text, "A") for text in corpus.documents], frames=4)
    evals = tmp_path / "eval.jsonl"
    evals.write_text("".join(json.dumps({"text": p}) + "\n" for p in corpus.passages))
    (file,) = expand_inputs(path)
    config = PipelineConfig(input=path, seq_len=64, quality=QualityConfig(
        decontaminate=(str(evals),), decontaminate_mode=mode))
    plan = plan_quality(config, inputs=[file])
    checks = dry_run.sample_checks(plan)
    text = sum(len(t.encode()) for t in corpus.documents)
    sample = dry_run_sample.sample_file(file, config=ReadConfig(), checks=checks,
                                        text_bytes=text // 4)
    assert not sample.complete and sample.scan_cpu > 0
    est = dry_run.estimate([sample], inputs=[file], config=config, plan=plan, vocab_size=8192,
                           cluster=CLUSTER, tokenized=False, backend=GIGATOKEN,
                           rate=dry_run_rates.load_rate("gigatoken"))
    (line,) = dry_run_report.decontamination_lines(est)
    assert "ESTIMATE from the sample, document by document" in line
    found = est.drops.contamination
    assert found.per_set[str(evals)] == pytest.approx(10, abs=3)  # in the sampled quarter
    if mode == "drop":
        assert est.dropped["decontaminated"] == pytest.approx(40, rel=0.3)
        assert found.redacted == 0
    else:
        assert est.dropped.get("decontaminated", 0) == 0
        assert found.redacted == found.per_set[str(evals)] and found.spans >= found.redacted
        assert "more are redacted and kept" in line
