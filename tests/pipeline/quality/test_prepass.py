"""The data-quality options end to end, on generated input whose answers are known exactly:
exact dedup (across files, within a file, equal only after normalization), a validation split
removed from a training input that contains it (via its manifest and via its raw file), the
mixture by epochs and by token budget, and the global shuffle as a seeded permutation. The
multi_processing DirectRunner (two workers) writes byte-identical datasets, and the pre-pass
alone decides the same with its fan-out on and off.

Each file is one chunk (the default --chunk_bytes), so a dataset made with these options must
equal, byte for byte, the plain dataset of exactly the documents they should keep (and, for a
mixture, of each epoch's copies as input files of their own, in epoch order).
"""

import json
import pathlib
import unicodedata

import apache_beam as beam
import pytest
import sentencepiece as spm
from apache_beam.options.pipeline_options import PipelineOptions

from common.errors import InputError
from datagen.pile_files import pile_doc, write_jsonl, write_jsonl_zst
from pipeline import run
from pipeline.config import ReadConfig
from pipeline.dataset import roundtrip, verify
from pipeline.quality import doc_hash, exclusion, mixture, prepass
from pipeline.quality.decision_files import Decisions
from pipeline.quality.near_dup import NearDupOptions
from pipeline.quality.plan import QualityPlan
from pipeline.quality.prepass import FindDrops
from pipeline.read.inputs import expand_inputs
from schemas.records import iter_tfrecord_frames
from tests.pipeline.conftest import tiny_text

ARGS = ["--seq_len=16", "--encode_processes=1", "--shard_bytes=65536", "--split=train"]
IN_PROCESS = ["--runner=DirectRunner"]
TWO_WORKERS = ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
               "--direct_num_workers=2"]
U = [tiny_text(500 + i, 12 + i % 7) for i in range(14)]
U[7] = "café au lait\n" + U[7]
V = [tiny_text(700 + i, 10 + i % 5) for i in range(8)]
# Kept by --dedup=exact --exclude_docs_from=<val>, per input file, in order.
KEPT = ([U[i] for i in (0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 13)],
        [V[i] for i in (0, 1, 2, 3, 5, 7)])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, tiny_model) -> dict:
    """00.jsonl.zst (subset A): U0..U13, then U3 again, U5 with CRLF and trailing blanks, U7
    decomposed (NFD). 01.jsonl (subset B): V0..V3, U2, V4..V7, U9, V2 again.
    val.jsonl: U3, U12, V4, V6 with trailing spaces, and one document of its own."""
    root = tmp_path_factory.mktemp("quality")
    (root / "in").mkdir()
    first = U + [U[3], U[5].replace("\n", "\r\n") + " \t", unicodedata.normalize("NFD", U[7])]
    second = V[:4] + [U[2]] + V[4:] + [U[9], V[2]]
    write_jsonl_zst(root / "in" / "00.jsonl.zst", [pile_doc(t, "A") for t in first])
    write_jsonl(root / "in" / "01.jsonl", [pile_doc(t, "B") for t in second])
    write_jsonl(root / "val.jsonl", [pile_doc(U[3], "A"), pile_doc(U[12], "A"),
                                     pile_doc(V[4], "B"), pile_doc(V[6] + "  ", "B"),
                                     pile_doc("only in val", "A")])
    val = root / "val"
    assert run.main(["--input", str(root / "val.jsonl"), "--output", str(val),
                     "--tokenizer_model", str(tiny_model), *ARGS, "--split=val",
                     *IN_PROCESS]) == 0
    return {"root": root, "in": root / "in", "val": val, "model": str(tiny_model),
            "sp": spm.SentencePieceProcessor(model_file=str(tiny_model)),
            "first": first, "second": second}


def make(corpus, name, *options, runner=IN_PROCESS, inputs=None) -> pathlib.Path:
    out = corpus["root"] / name
    assert run.main(["--input", str(inputs or corpus["in"]), "--output", str(out),
                     "--tokenizer_model", corpus["model"], *ARGS, *options, *runner]) == 0
    return out


def manifest(out: pathlib.Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def shard_bytes(out: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.tfrecord"))}


def records(out: pathlib.Path) -> list[bytes]:
    found = []
    for path in sorted(out.glob("*.tfrecord")):
        with open(path, "rb") as handle:
            found += list(iter_tfrecord_frames(handle))
    return found


def same_files(a: pathlib.Path, b: pathlib.Path) -> bool:
    def files(d):
        return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*"))
                if p.is_file() and p.name != "manifest.json"}
    return files(a) == files(b)


@pytest.fixture(scope="module")
def deduped(corpus) -> pathlib.Path:
    return make(corpus, "deduped", "--dedup=exact", f"--exclude_docs_from={corpus['val']}")


def test_dedup_and_contamination_keep_exactly_the_expected_documents(corpus, deduped):
    doc = manifest(deduped)
    assert doc["accounting"] == {"read": 28, "written": 18, "rejected": {},
                                 "filtered": {"contaminated": 5, "duplicate": 5}}
    assert doc["quality"]["removed"] == {"contaminated": {"A": 3, "B": 2},
                                         "duplicate": {"A": 2, "B": 3}}
    assert doc["quality"]["excluded_hashes"] == 5
    # The lowest (file, line) is kept: U2 and U9 stay in file 0 (subset A), not file 1 (B).
    assert [i["documents"] for i in doc["inputs"]] == [12, 6]
    assert {n: s["documents"] for n, s in doc["subsets"].items()} == {"A": 12, "B": 6}
    written = b"".join(sorted(doc_hash.doc_hash(t) for t in KEPT[0] + KEPT[1]))
    assert b"".join((deduped / f["path"]).read_bytes() for f in doc["doc_hashes"]["files"]) \
        == written
    assert doc["doc_hashes"]["documents"] == 18
    # The same bytes as the plain dataset of exactly the kept documents, in input order.
    plain = corpus["root"] / "kept-in"
    plain.mkdir()
    write_jsonl(plain / "00.jsonl", [pile_doc(t, "A") for t in KEPT[0]])
    write_jsonl(plain / "01.jsonl", [pile_doc(t, "B") for t in KEPT[1]])
    assert shard_bytes(make(corpus, "kept", inputs=plain)) == shard_bytes(deduped)
    assert verify.verify(str(deduped)).problems == []
    assert not (deduped / ".quality").exists() and not (deduped / ".parts").exists()
    with pytest.raises(InputError, match="data-quality options"):
        roundtrip.check(str(deduped))


def test_raw_validation_file_removes_what_its_manifest_removes_and_shuffle_permutes(
        corpus, deduped):
    shuffled = make(corpus, "shuffled", "--dedup=exact",
                    f"--exclude_docs_from={corpus['root'] / 'val.jsonl'}", "--shuffle=global")
    assert manifest(shuffled)["accounting"] == manifest(deduped)["accounting"]
    assert manifest(shuffled)["shuffle"]["seed"] == 0
    unshuffled, permuted = records(deduped), records(shuffled)
    assert sorted(permuted) == sorted(unshuffled) and permuted != unshuffled
    other = make(corpus, "shuffled-seed1", "--dedup=exact", f"--exclude_docs_from={corpus['val']}",
                 "--shuffle=global", "--seed=1")
    assert sorted(records(other)) == sorted(unshuffled)
    assert records(other) not in (permuted, unshuffled)
    two = make(corpus, "shuffled-two", "--dedup=exact",
               f"--exclude_docs_from={corpus['root'] / 'val.jsonl'}", "--shuffle=global",
               runner=TWO_WORKERS)
    assert same_files(two, shuffled)


def test_mixture_by_epochs_is_each_epochs_copies_in_order(corpus):
    weights = {"A": 2.5, "B": 0}
    out = make(corpus, "epochs", f"--subset_weights={json.dumps(weights)}")
    doc, sp = manifest(out), corpus["sp"]
    counts = [[mixture.repeat_count(weights, subset=subset, seed=0, file_index=f, line=n + 1)
               for n in range(len(texts))]
              for f, (texts, subset) in enumerate(((corpus["first"], "A"),
                                                   (corpus["second"], "B")))]
    assert sorted(set(counts[0])) == [2, 3] and set(counts[1]) == {0}
    assert doc["accounting"]["filtered"] == {"mixture": 11} and doc["accounting"]["written"] == 17
    tokens = [len(ids) for ids in sp.encode(corpus["first"])]
    row = doc["mixture"]["subsets"]["A"]
    assert row == {"weight": 2.5, "documents_before": 17, "tokens_before": sum(tokens),
                   "documents_after": sum(counts[0]),
                   "tokens_after": sum(r * t for r, t in zip(counts[0], tokens)),
                   "token_share": 1.0}
    assert doc["mixture"]["subsets"]["B"]["documents_after"] == 0
    assert doc["mixture"]["subsets"]["B"]["tokens_before"] == sum(
        len(ids) for ids in sp.encode(corpus["second"]))
    assert doc["mixture"]["filtered"] == {"B": 11}
    # Epoch-major: epoch e holds, in input order, the documents with more than e copies.
    plain = corpus["root"] / "epochs-in"
    plain.mkdir()
    for epoch in range(3):
        write_jsonl(plain / f"{epoch}.jsonl", [pile_doc(t, "A") for t, r
                                               in zip(corpus["first"], counts[0]) if r > epoch])
    assert shard_bytes(make(corpus, "epochs-plain", inputs=plain)) == shard_bytes(out)
    assert same_files(make(corpus, "epochs-two", f"--subset_weights={json.dumps(weights)}",
                           runner=TWO_WORKERS), out)


def test_mixture_by_token_budget(corpus):
    sp = corpus["sp"]
    kept_a = [len(ids) for ids in sp.encode(KEPT[0])]
    budget = sum(kept_a) // 2
    options = ["--dedup=exact", f"--exclude_docs_from={corpus['val']}",
               f"--subset_tokens={json.dumps({'A': budget})}"]
    out = make(corpus, "budget", *options)
    doc = manifest(out)
    weight = budget / sum(kept_a)
    counts = [mixture.repeats(weight, mixture.uniform(seed=0, file_index=0, line=line))
              for line in (1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 14)]  # the kept lines of A
    row = doc["mixture"]["subsets"]["A"]
    assert doc["mixture"]["source"] == "tokens"
    assert row["token_budget"] == budget and row["weight"] == weight
    assert row["tokens_before"] == sum(kept_a) and row["documents_before"] == 12
    assert row["documents_after"] == sum(counts) < 12
    assert row["tokens_after"] == sum(r * t for r, t in zip(counts, kept_a))
    assert doc["mixture"]["subsets"]["B"]["weight"] == 1.0  # not named: all of it
    assert doc["accounting"]["filtered"]["mixture"] == 12 - sum(counts)
    assert same_files(make(corpus, "budget-two", *options, runner=TWO_WORKERS), out)


def test_bad_options_fail_before_any_work(corpus, tmp_path, capsys):
    out = tmp_path / "never"
    assert run.main(["--input", str(corpus["in"]), "--output", str(out),
                     "--exclude_docs_from=" + str(corpus["in"] / "01.jsonl"), *ARGS]) == 2
    assert "is also an --input of this run" in capsys.readouterr().err
    assert run.main(["--input", str(corpus["in"]), "--output", str(out),
                     '--subset_weights={"A": -2}', *ARGS]) == 2
    assert "--subset_weights: epochs of 'A' must be a finite number >= 0" in capsys.readouterr().err
    assert not out.exists()


def prepass_files(corpus, directory: pathlib.Path, *, fanout: bool, runner) -> dict[str, bytes]:
    """The pre-pass alone over ``corpus["in"]`` (subset B not read; val.jsonl excluded as raw
    input, every subset of it), in chunks of a few documents: its output files' bytes."""
    inputs = expand_inputs(str(corpus["in"]))
    sources = exclusion.resolve((str(corpus["root"] / "val.jsonl"),), inputs=inputs,
                                output=str(directory))
    with beam.Pipeline(options=PipelineOptions(runner)) as p:
        (p | beam.Create(inputs)
         | FindDrops(plan=QualityPlan(exact_dedup=True, exclusion=sources),
                     config=ReadConfig(chunk_bytes=1024, exclude_subsets=("B",)),
                     paths=tuple(f.path for f in inputs), directory=str(directory),
                     fanout=fanout, model_path=corpus["model"]))
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def prepass_fan_outs(corpus, directory: pathlib.Path, *, fanout: bool) -> list[str]:
    """The pre-pass's graph, built and not run: its steps that spread chunks over workers."""
    inputs = expand_inputs(str(corpus["in"]))
    sources = exclusion.resolve((str(corpus["root"] / "val.jsonl"),), inputs=inputs,
                                output=str(directory))
    p = beam.Pipeline(options=PipelineOptions(IN_PROCESS))
    (p | beam.Create(inputs)
     | FindDrops(plan=QualityPlan(exact_dedup=True, exclusion=sources), config=ReadConfig(),
                 paths=tuple(f.path for f in inputs), directory=str(directory),
                 fanout=fanout, model_path=corpus["model"]))
    return sorted(t.unique_name for t in p.to_runner_api().components.transforms.values()
                  if t.unique_name.endswith("/FanOut"))


def test_prepass_fans_out_its_reads_only_when_asked(corpus, tmp_path):
    """The equality below would hold were ``fanout`` ignored: the graph says it is not. Both
    the input and the excluded set are read, each fanned out."""
    assert prepass_fan_outs(corpus, tmp_path / "off", fanout=False) == []
    fanned = prepass_fan_outs(corpus, tmp_path / "on", fanout=True)
    assert len(fanned) == 2, fanned


def test_prepass_decides_the_same_with_fanout_on_and_off_and_two_workers(corpus, tmp_path):
    off = prepass_files(corpus, tmp_path / "off", fanout=False, runner=IN_PROCESS)
    assert off == prepass_files(corpus, tmp_path / "on", fanout=True, runner=IN_PROCESS)
    assert off == prepass_files(corpus, tmp_path / "two", fanout=True, runner=TWO_WORKERS)
    assert sorted(off) == ["00000.drops", "00001.drops", "totals.json"]
    first = Decisions.load(str(tmp_path / "off"), 0)
    assert [(line, first.reason(line)) for line in range(1, 18) if first.reason(line)] == [
        (4, "contaminated"), (13, "contaminated"), (15, "contaminated"), (16, "duplicate"),
        (17, "duplicate")]
    assert len(Decisions.load(str(tmp_path / "off"), 1)) == 0  # subset B is not read
    # val.jsonl's B documents count too: excluded raw input is read with every subset.
    assert json.loads(off["totals.json"]) == {"excluded_hashes": 5, "subsets": {"A": {
        "documents": 12, "tokens": sum(len(ids) for ids in corpus["sp"].encode(KEPT[0]))}}}


def repeated_input(root: pathlib.Path) -> tuple[pathlib.Path, dict]:
    """Three files: 30 distinct documents and 40 copies each of two of them, dealt
    round-robin from the last file so that the first copy met is not the lowest. -> the
    directory and each file's expected drops {line: "duplicate"}."""
    distinct = [tiny_text(900 + i, 14 + i % 9) for i in range(30)]
    files: list[list[str]] = [[], [], []]
    for i in range(40):
        files[2 - i % 3] += [distinct[4], distinct[11]]
    for i, text in enumerate(distinct):
        files[i % 3].insert(i % 5, text)
    (root / "rep").mkdir()
    seen, expected = set(), [{}, {}, {}]
    for index, texts in enumerate(files):
        write_jsonl(root / "rep" / f"{index:02d}.jsonl", [pile_doc(t, "A") for t in texts])
        for line, text in enumerate(texts, start=1):
            if text in seen:
                expected[index][line] = "duplicate"
            seen.add(text)
    return root / "rep", expected


def repeated_drops(inputs, directory: pathlib.Path, *, plan, runner) -> dict[str, bytes]:
    """The pre-pass over ``inputs`` in chunks of a few documents: its output files' bytes."""
    found = expand_inputs(str(inputs))
    with beam.Pipeline(options=PipelineOptions(runner)) as p:
        (p | beam.Create(found)
         | FindDrops(plan=plan, config=ReadConfig(chunk_bytes=1024),
                     paths=tuple(f.path for f in found), directory=str(directory), fanout=True))
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.mark.parametrize("near", [False, True], ids=["exact", "near"])
def test_copies_dropped_before_the_shuffle_decide_the_same_for_any_bundling(
        tmp_path, monkeypatch, near):
    """Without exclusions each bundle's table drops the copies it beats before the grouping
    by hash: a two-hash table (flushed often) in one process and the default one with two
    workers decide exactly the expected drops, and the keepers still reach the totals."""
    inputs, expected = repeated_input(tmp_path)
    plan = QualityPlan(exact_dedup=True, near=NearDupOptions() if near else None)
    monkeypatch.setattr(prepass, "HELD_HASHES", 2)
    small = repeated_drops(inputs, tmp_path / "small", plan=plan, runner=IN_PROCESS)
    monkeypatch.undo()
    assert small == repeated_drops(inputs, tmp_path / "two", plan=plan, runner=TWO_WORKERS)
    assert sum(len(drops) for drops in expected) == 80  # 82 of the two texts, 2 kept
    for index, drops in enumerate(expected):
        decisions = Decisions.load(str(tmp_path / "small"), index)
        assert len(decisions) == len(drops)
        assert {line: decisions.reason(line) for line in drops} == drops
    totals = json.loads(small["totals.json"])
    assert totals["subsets"] == {"A": {"documents": 30, "tokens": 0}}
    assert ("near_dup" in totals) == near
