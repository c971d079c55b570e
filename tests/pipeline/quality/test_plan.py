"""The quality plan: which stages each combination of flags runs, the files looked up once,
and a plan that pickles."""

import dataclasses
import pickle

import pytest

from datagen.pile_files import pile_doc, write_jsonl
from pipeline import run
from pipeline.config import PipelineConfig, QualityConfig, TokenizerTrainingConfig
from pipeline.quality import eval_sets
from pipeline.quality import plan as plan_module
from pipeline.quality.exclusion import ExclusionSources
from pipeline.quality.near_dup import NearDupOptions
from pipeline.quality.plan import QualityPlan, plan_quality
from pipeline.read.inputs import expand_inputs
from schemas import manifest
from schemas.block_shuffle import BlockShuffleSpec
from tests.pipeline.conftest import tiny_text


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """An input file, an evaluation set and a raw file to exclude."""
    root = tmp_path_factory.mktemp("plan")
    write_jsonl(root / "in.jsonl", [pile_doc(tiny_text(i, 60), ("A", "B")[i % 2])
                                    for i in range(12)])
    write_jsonl(root / "eval.jsonl", [{"text": tiny_text(100, 20)}])
    write_jsonl(root / "other.jsonl", [pile_doc(tiny_text(3, 60), "A")])
    return {"root": root, "inputs": expand_inputs(str(root / "in.jsonl")),
            "eval": str(root / "eval.jsonl"), "other": str(root / "other.jsonl")}


def plan_of(files, **quality) -> QualityPlan:
    config = PipelineConfig(input=str(files["root"] / "in.jsonl"),
                            output=str(files["root"] / "out"), quality=QualityConfig(**quality))
    return plan_quality(config, inputs=files["inputs"])


STAGES = ("exact_dedup", "groups_by_hash", "decides", "counts_tokens", "prepass_runs",
          "redacts", "active")


@pytest.mark.parametrize(("flags", "on"), [
    ({}, ()),
    ({"dedup": "exact"}, ("exact_dedup", "groups_by_hash", "decides", "prepass_runs", "active")),
    ({"dedup": "near"}, ("exact_dedup", "groups_by_hash", "decides", "prepass_runs", "active")),
    ({"exclude_docs_from": "other"}, ("groups_by_hash", "decides", "prepass_runs", "active")),
    ({"decontaminate": "eval"}, ("decides", "prepass_runs", "active")),
    ({"decontaminate": "eval", "decontaminate_mode": "redact"},
     ("decides", "prepass_runs", "redacts", "active")),
    ({"subset_tokens": '{"A": 100}'}, ("counts_tokens", "prepass_runs", "active")),
    ({"subset_weights": "pile-v1"}, ("active",)),  # the repeats need no pre-pass
    ({"subset_weights": "{}"}, ("active",)),  # given, if empty: the manifest says so
    ({"shuffle": "global"}, ("active",)),
    ({"dedup": "exact", "decontaminate": "eval", "subset_tokens": '{"B": 5}'},
     ("exact_dedup", "groups_by_hash", "decides", "counts_tokens", "prepass_runs", "active")),
])
def test_which_stages_run_for_each_combination_of_flags(files, flags, on):
    flags = {k: (files[v],) if k in ("exclude_docs_from", "decontaminate") else v
             for k, v in flags.items()}
    plan = plan_of(files, **flags)
    assert {name for name in STAGES if getattr(plan, name)} == set(on)
    assert plan.dedup == flags.get("dedup", "off")  # the manifest's form
    assert (plan.near is not None) == (flags.get("dedup") == "near")
    assert (plan.decontaminate is not None) == ("decontaminate" in flags)


def test_the_plan_holds_the_options_of_each_stage(files):
    plan = plan_of(files, dedup="near", near_dup_threshold=0.7, minhash_perm=64,
                   minhash_bands=8, shingle_words=3, exclude_docs_from=(files["other"],),
                   decontaminate=(files["eval"],), decontaminate_ngram=8,
                   decontaminate_mode="redact", subset_weights='{"A": 2}', shuffle="global",
                   shuffle_block_records=64, shuffle_window_blocks=8)
    assert plan.shuffle_spec == BlockShuffleSpec(block_records=64, window_blocks=8)
    assert plan.near == NearDupOptions(threshold=0.7, perm=64, bands=8, shingle_words=3)
    assert plan.exclude_docs_from == (files["other"],)
    assert [f.path for f in plan.exclusion.raw_files] == [files["other"]]
    assert plan.decontaminate.names == (files["eval"],)
    assert [(f.path, f.set_index) for f in plan.decontaminate.files] == [(files["eval"], 0)]
    assert (plan.decontaminate.n, plan.decontaminate.mode) == (8, "redact")
    assert (plan.weights, plan.budgets, plan.mixture) == ({"A": 2.0}, {}, "weights")
    assert plan.shuffle and plan.seed == 0


@pytest.mark.parametrize(("flags", "source"), [
    ({}, ""), ({"subset_weights": "pile-v1"}, "pile-v1"),
    ({"subset_weights": '{"A": 2}'}, "weights"), ({"subset_tokens": '{"A": 2e3}'}, "tokens")])
def test_the_mixture_source_is_the_manifests(files, flags, source):
    plan = plan_of(files, **flags)
    assert plan.mixture == source
    assert plan.budgets == ({"A": 2000} if source == "tokens" else {})


def test_the_seed_is_the_runs(files):
    config = PipelineConfig(input="x", output=str(files["root"] / "out"),
                            training=TokenizerTrainingConfig(seed=7),
                            quality=QualityConfig(shuffle="global"))
    assert plan_quality(config, inputs=files["inputs"]).seed == 7


def test_near_dedup_without_exact_dedup_is_refused():
    with pytest.raises(ValueError, match="exact_dedup"):
        QualityPlan(near=NearDupOptions())


def test_the_plan_pickles(files):
    plan = plan_of(files, dedup="near", exclude_docs_from=(files["other"],),
                   decontaminate=(files["eval"],), subset_tokens='{"A": 5}', shuffle="global")
    again = pickle.loads(pickle.dumps(plan))
    assert again == plan and again.prepass_runs and again.redacts is False
    assert QualityPlan() == pickle.loads(pickle.dumps(QualityPlan()))
    assert QualityPlan().exclusion == ExclusionSources()


@pytest.fixture
def lookups(monkeypatch):
    """Counts of the evaluation-set and exclusion look-ups."""
    counts = {"eval_sets": 0, "exclusion": 0}
    resolve_eval, resolve_exclusion = eval_sets.resolve, plan_module.resolve_exclusion

    def counted_eval(*args, **kwargs):
        counts["eval_sets"] += 1
        return resolve_eval(*args, **kwargs)

    def counted_exclusion(*args, **kwargs):
        counts["exclusion"] += 1
        return resolve_exclusion(*args, **kwargs)

    monkeypatch.setattr(eval_sets, "resolve", counted_eval)
    monkeypatch.setattr(plan_module, "resolve_exclusion", counted_exclusion)
    return counts


def test_a_plan_looks_the_files_up_once(files, lookups):
    plan_of(files, decontaminate=(files["eval"],), exclude_docs_from=(files["other"],))
    assert lookups == {"eval_sets": 1, "exclusion": 1}


def test_the_dry_run_looks_the_evaluation_sets_up_once(files, lookups, capsys):
    from pipeline.launch.dry_run.estimate import dry_run_split

    config = PipelineConfig(input=str(files["root"] / "in.jsonl"), seq_len=16,
                            quality=QualityConfig(dedup="exact", decontaminate=(files["eval"],)))
    est = dry_run_split(config, ["--runner=DirectRunner"])
    assert lookups["eval_sets"] == 1
    assert est.plan.decontaminate.names == (files["eval"],) and est.prepass is not None
    assert "quality pre-pass (read, hash, scan n-grams every input" in capsys.readouterr().out


def test_the_run_looks_the_evaluation_sets_up_once(files, tiny_model, lookups, tmp_path):
    out = tmp_path / "train"
    assert run.main(["--input", str(files["root"] / "in.jsonl"), "--output", str(out),
                     "--tokenizer_model", str(tiny_model), "--decontaminate", files["eval"],
                     "--dedup=exact", "--seq_len=16", "--encode_processes=1",
                     "--runner=DirectRunner"]) == 0
    assert lookups == {"eval_sets": 1, "exclusion": 1}
    doc = manifest.load(str(out)).doc
    assert doc["quality"]["dedup"] == "exact"
    assert list(doc["quality"]["decontamination"]["eval_sets"]) == [files["eval"]]


def test_near_dedup_shard_counts_follow_the_input_size(files):
    assert (plan_of(files, dedup="near").near.band_shards,
            plan_of(files, dedup="near").near.signature_shards) == (1, 1)
    big = [dataclasses.replace(f, bytes=460 * 10**9) for f in files["inputs"]]
    config = PipelineConfig(input=str(files["root"] / "in.jsonl"),
                            output=str(files["root"] / "out"), quality=QualityConfig(dedup="near"))
    near = plan_quality(config, inputs=big).near
    assert (near.band_shards, near.signature_shards) == (4096, 4096)
