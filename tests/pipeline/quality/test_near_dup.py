"""``--dedup=near`` end to end in the pre-pass, on a generated corpus with planted
near-duplicates (``datagen.near_duplicates``). The defaults were tuned on seed 7; these tests
use seed 11, a corpus they were not tuned on.

Goals (issue 21): recall >= 0.95 for planted pairs of Jaccard >= 0.85; at most 1% of the
documents whose highest Jaccard to any other is below 0.5 removed; in each pair found, the
lower (file, line) kept; the per-subset totals count only the kept documents. Issue 29: a
revision chain that star candidates would cut stays one cluster on every runner, and planted
clusters of 3 to 5 real-prose documents keep exactly their lowest member.
"""

import json
import pathlib

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from datagen import near_clusters, revision_chains
from datagen.near_duplicates import write_corpus
from pipeline.config import ReadConfig
from pipeline.quality import near_dup
from pipeline.quality.decision_files import Decisions
from pipeline.quality.near_dup import NearDupOptions
from pipeline.quality.plan import QualityPlan
from pipeline.quality.prepass import FindDrops
from pipeline.read.inputs import expand_inputs

HELD_OUT_SEED = 11
IN_PROCESS = ["--runner=DirectRunner"]
TWO_WORKERS = ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
               "--direct_num_workers=2"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("near")
    return root, write_corpus(root / "in", seed=HELD_OUT_SEED, documents=1500, files=3)


DEFAULTS = NearDupOptions()


def prepass(root: pathlib.Path, directory: pathlib.Path, *, runner, chunk_bytes=1 << 20,
            options=DEFAULTS) -> dict[str, bytes]:
    inputs = expand_inputs(str(root / "in"))
    with beam.Pipeline(options=PipelineOptions(runner)) as p:
        (p | beam.Create(inputs)
         | FindDrops(plan=QualityPlan(exact_dedup=True, near=options),
                     config=ReadConfig(chunk_bytes=chunk_bytes),
                     paths=tuple(f.path for f in inputs), directory=str(directory)))
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def decided(corpus, tmp_path_factory):
    root, _ = corpus
    directory = tmp_path_factory.mktemp("decided")
    return directory, prepass(root, directory, runner=IN_PROCESS)


def _dropped(directory, files: int) -> dict:
    out = {}
    for f in range(files):
        found = Decisions.load(str(directory), f)
        for line in range(1, 2000):
            if found.reason(line):
                out[(f, line)] = found.reason(line)
    return out


def test_recall_and_false_removals_on_a_held_out_corpus(corpus, decided):
    _, truth = corpus
    directory, _ = decided
    dropped = _dropped(directory, len(truth.paths))
    assert set(dropped.values()) == {"near_duplicate"}
    high = [p for p in truth.planted if p.jaccard >= 0.85]
    found = [p for p in high if (p.source in dropped) != (p.copy in dropped)]
    assert len(high) >= 100 and len(found) / len(high) >= 0.95
    for pair in found:  # the lower (file, line) of the pair is the one kept
        assert max(pair.source, pair.copy) in dropped
    best = truth.max_similarity()
    every = [(f, line) for f in range(len(truth.paths))
             for line in range(1, 1 + truth.documents // len(truth.paths) + 1)]
    low = [doc for doc in every if best.get(doc, 0.0) < 0.5]
    assert len(low) >= 500
    assert sum(doc in dropped for doc in low) <= 0.01 * len(low)


def test_totals_count_only_the_kept_and_describe_the_clusters(corpus, decided):
    _, truth = corpus
    directory, files = decided
    totals = json.loads(files["totals.json"])
    dropped = _dropped(directory, len(truth.paths))
    assert totals["subsets"] == {"Pile-CC": {"documents": truth.documents - len(dropped),
                                             "tokens": 0}}
    near = totals["near_dup"]
    sizes = {int(k): v for k, v in near["cluster_sizes"].items()}
    assert sum((size - 1) * n for size, n in sizes.items()) == len(dropped)
    assert near["verified_pairs"] <= near["candidate_pairs"]
    examples = near["examples"]
    assert len(examples) == 5 and examples == sorted(examples, key=lambda e: e["kept"])
    for e in examples:
        assert tuple(e["kept"]) < tuple(e["dropped"]) and tuple(e["dropped"]) in dropped
        assert tuple(e["kept"]) not in dropped and 0.8 <= e["jaccard"] <= 1.0


@pytest.mark.slow
def test_two_workers_and_small_chunks_decide_the_same(corpus, decided, tmp_path):
    root, _ = corpus
    _, files = decided
    assert prepass(root, tmp_path / "two", runner=TWO_WORKERS, chunk_bytes=64 << 10) == files


# Each revision is the previous with 3 of 300 words replaced: Jaccard ~0.91 to the next, ~0.83
# two apart, ~0.76 three apart (under the 0.8 threshold), ~0 far apart. A band key shared by a
# run of revisions linked as a star from its lowest member verifies only its first link or two,
# so star candidates cut this chain into pieces (4 at this size and seed, measured), while
# each revision's next neighbour keeps every link.
CHAIN = 1000
# Fewer rounds than a 1,000-revision chain needs (~10): the residual finishes it, as it does
# a chain of any length past the default rounds.
FEW_ROUNDS = NearDupOptions(rounds=3)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    root = tmp_path_factory.mktemp("chain")
    return root, revision_chains.write_corpus(root / "in", seed=3, chain=CHAIN, copies=1000,
                                              others=200, files=3, replaced=3)


def _chain_kept(root, directory, truth, *, runner) -> tuple[list, dict]:
    files = prepass(root, directory, runner=runner, options=FEW_ROUNDS)
    dropped = _dropped(directory, len(truth.paths))
    return [doc for doc in truth.chain if doc not in dropped], json.loads(files["totals.json"])


def test_a_revision_chain_is_one_cluster_keeping_its_first_revision(chain, tmp_path):
    # Only the links along the chain join it, and they are all kept.
    root, truth = chain
    kept, totals = _chain_kept(root, tmp_path / "one", truth, runner=IN_PROCESS)
    assert kept == [truth.chain[0]]
    sizes = {int(k): v for k, v in totals["near_dup"]["cluster_sizes"].items()}
    assert sizes == {CHAIN: 1}
    # the licence's copies go in the exact stage, the unrelated texts all stay
    assert totals["subsets"]["Pile-CC"]["documents"] == 1 + 1 + 200


@pytest.mark.slow
def test_a_revision_chain_is_one_cluster_on_two_workers(chain, tmp_path):
    root, truth = chain
    kept, totals = _chain_kept(root, tmp_path / "two", truth, runner=TWO_WORKERS)
    assert kept == [truth.chain[0]]
    assert totals["subsets"]["Pile-CC"]["documents"] == 1 + 1 + 200


@pytest.mark.slow
def test_a_revision_chain_is_one_cluster_through_the_portable_runner(chain, portable, tmp_path):
    """Through Beam's job service and an external SDK worker pool (``tests.portable``)."""
    root, truth = chain
    kept, totals = _chain_kept(root, tmp_path / "portable", truth, runner=portable.beam_args)
    assert kept == [truth.chain[0]], portable.logs()[-3000:]
    assert totals["subsets"]["Pile-CC"]["documents"] == 1 + 1 + 200


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    root = tmp_path_factory.mktemp("clusters")
    return root, near_clusters.write_corpus(root / "in", seed=HELD_OUT_SEED, clusters=12)


def test_planted_clusters_of_three_to_five_keep_exactly_their_lowest_member(clusters, tmp_path):
    """Real prose (the installation's help topics): 12 clusters of a topic and 2-4 light
    edits of it (every two members at Jaccard >= 0.85), and the other topics once each."""
    root, truth = clusters
    files = prepass(root, tmp_path / "clusters", runner=IN_PROCESS)
    dropped = _dropped(tmp_path / "clusters", len(truth.paths))
    assert truth.min_jaccard >= 0.85 and {len(c) for c in truth.clusters} == {3, 4, 5}
    assert len(truth.clean) >= 20
    for members in truth.clusters:  # sorted by (file, line): each keeps its first only
        assert [doc for doc in members if doc not in dropped] == [members[0]], members
    assert not set(truth.clean) & set(dropped)
    assert len(dropped) == sum(len(c) - 1 for c in truth.clusters)
    near = json.loads(files["totals.json"])["near_dup"]
    assert near["cluster_sizes"] == {"3": 4, "4": 4, "5": 4}


def test_shard_counts_move_no_decision(corpus, decided, tmp_path):
    root, _ = corpus
    _, files = decided
    sharded = NearDupOptions(band_shards=8, signature_shards=4)
    assert prepass(root, tmp_path / "sharded", runner=IN_PROCESS, options=sharded) == files


def _sig(values):
    return b"".join(v.to_bytes(4, "little") for v in values)


def _join(shard, values, *, shards):
    """``join_ends``'s output split: (candidates scored in the shard, tagged ends)."""
    inside, across = [], []
    for row in near_dup.join_ends(shard, values, signature_shards=shards):
        if isinstance(row, beam.pvalue.TaggedOutput):
            assert row.tag == near_dup.CROSS
            across.append(row.value)
        else:
            inside.append(row)
    return inside, across


A, B, C = (0, 1, "A", 5), (0, 2, "A", 6), (1, 1, "B", 7)
EDGE = ((0, 1), (0, 2))
JOIN_VALUES = [(near_dup.ENDS, [((0, 1), EDGE), ((0, 2), EDGE), ((0, 1), EDGE), ((0, 2), EDGE)]),
               (near_dup.SIGS, [((0, 1), A, _sig([1, 2, 3, 4])), ((0, 2), B, _sig([1, 2, 3, 9])),
                                ((1, 1), C, _sig([5, 6, 7, 8]))])]


def test_the_join_scores_an_edge_with_both_ends_in_the_shard_once_and_ships_no_signature():
    # The edge came from two bands: scored once; no signature leaves the shard.
    inside, across = _join(0, JOIN_VALUES, shards=1)
    assert inside == [(A, B, 0.75)]
    assert across == []


def test_the_join_ships_an_edge_across_shards_end_by_end_to_be_scored_by_edge():
    # With 2 shards, (0, 1) is in shard 1 and (0, 2) in shard 0: each end leaves its shard.
    assert [near_dup.signature_shard(p, 2) for p in EDGE] == [1, 0]
    values = [(kind, [row for row in rows if near_dup.signature_shard(row[0], 2) == 1])
              for kind, rows in JOIN_VALUES]
    inside, across = _join(1, values, shards=2)
    assert inside == []
    assert across == [(EDGE, (A, _sig([1, 2, 3, 4])))] * 2  # one per band; ByEdge merges them
    _, other = _join(0, [(kind, [row for row in rows if near_dup.signature_shard(row[0], 2) == 0])
                         for kind, rows in JOIN_VALUES], shards=2)
    assert near_dup.scored(EDGE, [end for _, end in across + other]) == (A, B, 0.75)


def test_a_chain_in_one_shard_leaves_the_join_without_its_signatures():
    """The join's output for a chain of n revisions in one shard: n - 1 candidate rows, none
    carrying a signature, however long the chain (what the by-edge grouping and the runner
    hold used to be each end's signature, per edge)."""
    for n in (10, 1000):
        docs = [(0, line, "A", 1) for line in range(n)]
        edges = [((0, i), (0, i + 1)) for i in range(n - 1)]
        values = [(near_dup.ENDS, [(end, edge) for edge in edges for end in edge]),
                  (near_dup.SIGS, [((0, i), docs[i], _sig([i, i + 1, 7, 8])) for i in range(n)])]
        inside, across = _join(0, values, shards=1)
        assert across == []
        assert inside == [(docs[i], docs[i + 1], 0.5) for i in range(n - 1)]
        assert not any(isinstance(field, bytes) for row in inside for field in row)


def test_stats_are_the_same_however_the_rows_are_split():
    n = [(0, i, "A", 1) for i in range(12)]
    candidates = [(n[0], n[i], 0.9) for i in range(1, 8)] + [(n[8], n[9], 0.5)]
    roles = [("size", 3), ("size", 1), ("size", 1)] + [
        ("example", e) for e in reversed(candidates[:7])]
    rows = [("candidate", e) for e in candidates] + roles
    fn = near_dup.StatsFn(threshold=0.8)

    def combine(parts):
        accs = [fn.create_accumulator() for _ in parts]
        for acc, part in zip(accs, parts):
            for row in part:
                fn.add_input(acc, row)
        return fn.extract_output(fn.merge_accumulators(accs))

    whole = combine([rows])
    assert whole == combine([rows[::3], rows[1::3], rows[2::3]])
    assert whole["candidate_pairs"] == 8 and whole["verified_pairs"] == 7
    assert whole["cluster_sizes"] == {"2": 2, "4": 1}
    assert [e["dropped"] for e in whole["examples"]] == [[0, i] for i in range(1, 6)]
    assert fn.extract_output(fn.create_accumulator()) == {
        "candidate_pairs": 0, "verified_pairs": 0, "cluster_sizes": {}, "examples": []}


def test_node_rows_give_a_centre_its_size_and_a_kept_node_its_edges():
    a, b, c = (0, 1, "A", 0), (0, 2, "A", 0), (0, 3, "A", 0)
    roles = [("centre", None), ("centre", None), ("edge", (a, c, 0.9)), ("edge", (a, b, 0.9))]
    assert list(near_dup.node_rows(a, roles)) == [
        ("size", 2), ("example", (a, b, 0.9)), ("example", (a, c, 0.9))]
    assert list(near_dup.node_rows(b, [("member", None), ("edge", (b, c, 0.9))])) == []
