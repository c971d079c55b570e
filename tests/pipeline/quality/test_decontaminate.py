"""``--decontaminate`` end to end: planted evaluation passages are dropped or cut, the clean
documents are written untouched, the manifest counts them, and two worker processes write the
same bytes as one."""

import json
import pathlib
import shutil

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from datagen.contamination import make_corpus
from datagen.pile_files import pile_doc, write_jsonl, write_jsonl_zst
from pipeline import run
from pipeline.config import ReadConfig
from pipeline.dataset import reader
from pipeline.quality import eval_sets, ngrams
from pipeline.quality.decision_files import REDACTED, Decisions, read_totals
from pipeline.quality.decontaminate import DecontaminateOptions, whole_eval_set
from pipeline.quality.plan import QualityPlan
from pipeline.quality.prepass import FindDrops
from pipeline.quality.selection import Selection
from pipeline.read.inputs import expand_inputs
from pipeline.read.stage import Chunk, ReadStats, read_file
from schemas import manifest
from tokenizer.encoder import load_model_bytes, processor_from_bytes

ARGS = ["--seq_len=64", "--encode_processes=1", "--chunk_bytes=20000", "--split=train"]
TWO_WORKERS = ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
               "--direct_num_workers=2"]
PROSE = ("The harbour was quiet that winter, and most of the boats stayed tied up at the pier.",
         "Nobody in the village could remember who had first planted the orchard on the hill.",
         "By the time the letter arrived, the bridge had already been rebuilt twice.",
         "She read the instructions again, slowly, and then put the kettle on.")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """120 documents (30 planted, the last one nothing but a passage, and a copy of document
    0 at the end), an evaluation file of 20 passages + 3 short ones."""
    made = make_corpus(seed=11, documents=120, passages=20, planted=30, min_words=13,
                       short_passages=3)
    root = tmp_path_factory.mktemp("decontaminate")
    texts = list(made.documents) + [made.passages[4].upper(), made.documents[0]]
    write_jsonl_zst(root / "train.jsonl.zst",
                    [pile_doc(text, ("A", "B")[i % 2]) for i, text in enumerate(texts)])
    write_jsonl(root / "eval.jsonl", [{"text": text, "id": i}
                                      for i, text in enumerate(made.passages)])
    return {"made": made, "texts": texts, "root": root}


def make(corpus, tiny_model, out: pathlib.Path, *options, runner=("--runner=DirectRunner",)):
    assert run.main(["--input", str(corpus["root"] / "train.jsonl.zst"), "--output", str(out),
                     "--tokenizer_model", str(tiny_model),
                     "--decontaminate", str(corpus["root"] / "eval.jsonl"),
                     *ARGS, *options, *runner]) == 0
    return manifest.load(str(out)).doc


def decoded(out: pathlib.Path) -> list[str]:
    dataset = manifest.load(str(out))
    sp = processor_from_bytes(load_model_bytes(dataset.tokenizer_path))
    return [sp.decode(ids.tolist()) for ids in reader.iter_documents(dataset)]


def test_drop_removes_every_planted_document_and_nothing_else(corpus, tiny_model, tmp_path):
    doc = make(corpus, tiny_model, tmp_path / "drop")
    planted = {plant.document for plant in corpus["made"].plants} | {120}
    keep = [text for i, text in enumerate(corpus["texts"]) if i not in planted and i != 121]
    assert decoded(tmp_path / "drop") == keep
    assert doc["accounting"]["filtered"] == {"decontaminated": 32}  # 30, the passage, the copy
    quality = doc["quality"]
    assert sum(quality["removed"]["decontaminated"].values()) == 32
    found = quality["decontamination"]
    eval_set = found["eval_sets"][str(corpus["root"] / "eval.jsonl")]
    assert (eval_set["passages"], eval_set["short_passages"], eval_set["documents"]) == (23, 3, 32)
    assert found["mode"] == "drop" and found["ngram"] == 13
    assert sum(row["documents_dropped"] for row in found["subsets"].values()) == 32


@pytest.mark.slow  # two pipeline runs, one with two worker processes: ~25 s of CPU
def test_redact_cuts_the_planted_words_and_two_workers_agree(corpus, tiny_model, tmp_path):
    doc = make(corpus, tiny_model, tmp_path / "one", "--decontaminate_mode=redact",
               "--dedup=exact")
    made = corpus["made"]
    # Every document but the bare passage (blank once cut) and the duplicate, planted words cut.
    assert decoded(tmp_path / "one") == [made.redacted(i) for i in range(120)]
    assert doc["accounting"]["filtered"] == {"decontaminated": 1, "duplicate": 1}
    subsets = doc["quality"]["decontamination"]["subsets"]
    assert sum(row["documents_emptied"] for row in subsets.values()) == 1
    assert sum(row["documents_redacted"] for row in subsets.values()) == 31  # copy included
    assert sum(row["spans"] for row in subsets.values()) == 32
    removed = sum(p.span[1] - p.span[0] for p in made.plants)
    removed += len(made.passages[4]) + made.plants[0].span[1] - made.plants[0].span[0]
    assert sum(row["characters_removed"] for row in subsets.values()) == removed

    make(corpus, tiny_model, tmp_path / "two", "--decontaminate_mode=redact", "--dedup=exact",
         runner=TWO_WORKERS)
    shards = sorted(p.name for p in (tmp_path / "one").glob("*.tfrecord*"))
    assert shards and all((tmp_path / "one" / name).read_bytes()
                          == (tmp_path / "two" / name).read_bytes() for name in shards)
    assert decoded(tmp_path / "two") == decoded(tmp_path / "one")


def test_bad_evaluation_files_fail_with_one_line(corpus, tiny_model, tmp_path, capsys):
    base = ["--input", str(corpus["root"] / "train.jsonl.zst"), "--tokenizer_model",
            str(tiny_model), *ARGS, "--runner=DirectRunner"]
    missing = tmp_path / "nowhere.jsonl"
    assert run.main([*base, "--output", str(tmp_path / "a"), "--decontaminate",
                     str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: --decontaminate") and str(missing) in err[-1]
    assert not (tmp_path / "a" / "manifest.json").exists()

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "fine"}) + "\n" + json.dumps({"question": "q"}) + "\n")
    assert run.main([*base, "--output", str(tmp_path / "b"), "--decontaminate", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert f"{bad} line 2 has no string 'text' field" in err[-1]
    assert "--decontaminate_field" in err[-1]
    assert run.main([*base, "--output", str(tmp_path / "c"), "--decontaminate", str(bad),
                     "--decontaminate_field=question"]) == 2  # line 1 lacks it now
    assert f"{bad} line 1 has no string 'question'" in capsys.readouterr().err


class _SideInputs(beam.pipeline.PipelineVisitor):
    """The steps of ``Decontaminate`` whose outputs its transforms take as side inputs."""

    def __init__(self):
        self.producers = set()

    def visit_transform(self, applied):
        for side in applied.side_inputs:
            if "Decontaminate/" in applied.full_label:
                label = side.pvalue.producer.full_label
                self.producers.add(label.split("Decontaminate/", 1)[1].split("/")[0])


@pytest.mark.parametrize("shards", [1, 5])
def test_scan_alone_groups_nothing_by_hash(corpus, tmp_path, shards):
    """The pre-pass with ``--decontaminate`` alone: the scan's drops need no document hash, so
    nothing is grouped by hash; every input file still gets its decision file (the clean one an
    empty one), and the kept documents are counted per subset. The evaluation n-grams meet the
    documents' in a keyed join, however many shards: no side input but the report's sums and
    the capped filter."""
    write_jsonl(tmp_path / "clean.jsonl", [pile_doc("nothing planted here", "A")])
    inputs = expand_inputs(f"{corpus['root'] / 'train.jsonl.zst'},{tmp_path / 'clean.jsonl'}")
    source = str(corpus["root"] / "eval.jsonl")
    options = DecontaminateOptions(
        files=eval_sets.resolve((source,), field="text", inputs=inputs), names=(source,), n=13,
        mode="drop", field="text", shards=shards)
    directory = tmp_path / "quality"
    p = beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"]))
    _ = (p | beam.Create(inputs)
         | FindDrops(plan=QualityPlan(decontaminate=options), config=ReadConfig(chunk_bytes=20000),
                     paths=tuple(f.path for f in inputs), directory=str(directory)))
    names = [t.unique_name for t in p.to_runner_api().components.transforms.values()]
    assert not [name for name in names if "GroupByHash" in name]
    assert [name for name in names if name.endswith("/GroupByInputFile")]
    sides = _SideInputs()
    p.visit(sides)
    # Small sums (ToList passes its own result to a step of its own), not the n-grams; the
    # n-grams' Bloom filter is one, of a size capped whatever the evaluation set.
    assert sides.producers <= {"AllCounts", "AllSetNgrams", "AllStats", "EvalFilter", "FilterStats"}
    p.run().wait_until_finish()

    train = next(f.index for f in inputs if f.path.endswith("train.jsonl.zst"))
    dropped = {plant.document for plant in corpus["made"].plants} | {120, 121}
    decisions = Decisions.load(str(directory), train)
    assert {line - 1 for line in range(1, 123) if decisions.reason(line)} == dropped
    assert len(Decisions.load(str(directory), 1 - train)) == 0
    kept = [i for i in range(122) if i not in dropped]
    assert read_totals(str(directory)) == {"excluded_hashes": 0, "subsets": {
        "A": {"documents": sum(i % 2 == 0 for i in kept) + 1, "tokens": 0},
        "B": {"documents": sum(i % 2 == 1 for i in kept), "tokens": 0}}}


def test_an_evaluation_set_named_twice_is_refused(tmp_path):
    # Two sets under one name would add up in the report: one matching document counted twice.
    from common.errors import ConfigError

    source = tmp_path / "eval.jsonl"
    source.write_text('{"text": "a passage"}\n')
    with pytest.raises(ConfigError, match="more than once"):
        eval_sets.resolve((str(source), str(source)), field="text", inputs=())


def _prepass(inputs, options: DecontaminateOptions, directory: pathlib.Path) -> None:
    p = beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"]))
    _ = (p | beam.Create(inputs)
         | FindDrops(plan=QualityPlan(decontaminate=options), config=ReadConfig(chunk_bytes=20000),
                     paths=tuple(f.path for f in inputs), directory=str(directory)))
    p.run().wait_until_finish()


def _parsed(inputs, selection: Selection | None) -> dict:
    """(file, line) -> text of every document Parse keeps, as the main pipeline's Parse does."""
    decisions, texts = {}, {}
    for file in inputs:
        for item in read_file(file, config=ReadConfig(chunk_bytes=20000)):
            if isinstance(item, Chunk) and selection is not None:
                item = selection.apply_chunk(item, ReadStats(file_index=file.index, path=file.path),
                                             decisions=decisions)
            if isinstance(item, Chunk):
                texts.update({(file.index, doc.line): doc.text for doc in item.documents})
    return texts


@pytest.mark.parametrize("shards", [1, 5])
def test_redact_cuts_from_the_decision_files_alone(corpus, tmp_path, shards):
    """Redact: the pre-pass writes each redacted document's spans into its decision file and
    nothing of the evaluation set but its capped Bloom filter (which Parse never reads); Parse cuts from the decision files alone (the evaluation
    file deleted after the pre-pass) exactly what one whole in-memory set cuts."""
    made = corpus["made"]
    first, second = made.passages[2], made.passages[9]
    write_jsonl(tmp_path / "prose.jsonl", [
        pile_doc(f"{PROSE[0]} {first}\n{PROSE[1]} {second.upper()} {PROSE[2]}", "A"),
        pile_doc(PROSE[3], "B"), b"{broken", pile_doc(f"  {second}\n", "B")])
    shutil.copy(corpus["root"] / "eval.jsonl", tmp_path / "eval.jsonl")
    inputs = expand_inputs(f"{corpus['root'] / 'train.jsonl.zst'},{tmp_path / 'prose.jsonl'}")
    source = str(tmp_path / "eval.jsonl")
    options = DecontaminateOptions(
        files=eval_sets.resolve((source,), field="text", inputs=inputs), names=(source,), n=13,
        mode="redact", field="text", shards=shards)
    reference = whole_eval_set(options)
    directory = tmp_path / "quality"
    _prepass(inputs, options, directory)
    assert sorted(path.name for path in directory.iterdir()) == [
        "00000.drops", "00001.drops", "decontamination.json", "eval_filter.bin", "totals.json"]
    (tmp_path / "eval.jsonl").unlink()

    got = _parsed(inputs, Selection(decisions=str(directory)))
    expected = {}
    for key, text in _parsed(inputs, None).items():
        found = ngrams.match(text, reference, redact=True)
        if found is None or found.text.strip():
            expected[key] = text if found is None else found.text
    assert got == expected
    prose = next(f.index for f in inputs if f.path.endswith("prose.jsonl"))
    train = 1 - prose
    assert got[prose, 1] == f"{PROSE[0]} \n{PROSE[1]}  {PROSE[2]}"  # two spans cut
    assert Decisions.load(str(directory), prose).spans(1).shape == (2, 2)
    assert (prose, 5) not in got and got[prose, 2] == PROSE[3]  # 5: blank once cut
    assert [got.get((train, i + 1)) for i in range(120)] == [made.redacted(i) for i in range(120)]
    decisions = Decisions.load(str(directory), train)
    assert sum(decisions.reason(i + 1) == REDACTED for i in range(122)) == 31
