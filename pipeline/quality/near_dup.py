"""``--dedup=near``: the near-duplicates among the exact dedup's survivors, in Beam.

``NearDuplicates`` takes the survivors as ``Signed`` rows (``pipeline.quality.records``; the
signature: ``pipeline.quality.minhash``, None for a document without words) and

1. ``Batch``: per bundle, the survivors' band keys (``pipeline.quality.lsh``) as numpy columns,
   one batch per shard of the key (``NearDupOptions.band_shards``), and their signatures, one
   batch per shard of (file, line) (``signature_shards``; both counts follow the input size:
   ``pipeline.quality.shards``): a few elements per bundle, not ``bands`` per
   document -> ``GroupByBandShard`` -> per shard, one sort gives each key's candidates (each
   document to its next ``lsh.NEIGHBOURS`` in (file, line) order: at most ``2n`` edges);
2. ``Verify``: one join by signature shard (the ends of the edges with the signatures) scores
   each edge whose ends are both in the shard there, once; the other edges' ends meet in one
   grouping by edge (which also drops the copies of an edge from several bands) to be scored;
   those whose estimated Jaccard is at least ``threshold`` are kept;
3. ``Components`` (``pipeline.quality.components``): each verified edge's component, so that
   chains of near-duplicates become one cluster, whose lowest (file, line) is kept.

Outputs (a dict of PCollections): ``drops`` ``(file, (line, "near_duplicate"))`` as the exact
stage's; ``kept`` ``(subset, (-1, -tokens))`` taking each drop back out of the per-subset
totals; ``stats`` one dict for ``totals.json`` (cluster sizes, up to ``EXAMPLES`` kept/dropped
pairs with the lowest keys, edge counts). Every output is a pure function of the survivors.
"""

from __future__ import annotations

import dataclasses

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from pipeline.quality import lsh, minhash
from pipeline.quality.components import DEFAULT_ROUNDS, Components
from pipeline.quality.decision_files import NEAR_DUPLICATE
from pipeline.quality.records import Candidate, Document, Signed

EXAMPLES = 5
# Band rows and signatures travel in batches keyed by shard, not one element per document and
# band; how many shards follows the input size (``pipeline.quality.shards``, in the options).
BATCH_DOCUMENTS = 4096  # a batch per this many survivors within a bundle bounds its memory
BANDS, SIGS, ENDS, CROSS = "bands", "sigs", "ends", "cross"


@dataclasses.dataclass(frozen=True)
class NearDupOptions:
    """``--near_dup_threshold``, ``--minhash_perm``, ``--minhash_bands``, ``--shingle_words``."""

    threshold: float = 0.8
    perm: int = 128
    bands: int = 16
    shingle_words: int = 5
    rounds: int = DEFAULT_ROUNDS
    band_shards: int = 1  # pipeline.quality.shards.shard_counts, set by the plan
    signature_shards: int = 1

    @property
    def minhash(self) -> minhash.MinHashOptions:
        return minhash.MinHashOptions(perm=self.perm, shingle_words=self.shingle_words)

    @classmethod
    def from_config(cls, quality) -> NearDupOptions:
        """From a ``pipeline.config.QualityConfig``."""
        return cls(threshold=quality.near_dup_threshold, perm=quality.minhash_perm,
                   bands=quality.minhash_bands, shingle_words=quality.shingle_words)


def signature_shard(position, shards: int) -> int:
    """The shard of a document's (file, line), of ``shards``."""
    file, line = position
    return (file * 1_000_003 + line) % shards


class _BatchFn(beam.DoFn):
    """Survivors -> per bundle, a few batches: band columns by ``digest % band_shards`` and
    (position, Document, signature) lists by ``signature_shard`` (tags ``bands``, ``sigs``),
    so that the per-document elements stop here."""

    def __init__(self, *, bands: int, band_shards: int, signature_shards: int):
        self._bands = bands
        self._band_shards = band_shards
        self._signature_shards = signature_shards
        self._docs: list = []

    def start_bundle(self):
        self._docs = []

    def process(self, row):
        doc = Signed._make(row)
        if doc.signature is not None:
            self._docs.append(doc)
        if len(self._docs) >= BATCH_DOCUMENTS:
            yield from self._flush(lambda tag, value: beam.pvalue.TaggedOutput(tag, value))

    def finish_bundle(self):
        yield from self._flush(lambda tag, value: beam.pvalue.TaggedOutput(
            tag, WindowedValue(value, MIN_TIMESTAMP, [GlobalWindow()])))

    def _flush(self, out):
        docs, self._docs = self._docs, []
        if not docs:
            return
        columns = lsh.band_columns(docs, bands=self._bands)
        for shard, part in lsh.shard_columns(columns, shards=self._band_shards):
            yield out(BANDS, (shard, part))
        by_shard: dict = {}
        for doc in docs:
            position = tuple(doc.position)
            by_shard.setdefault(signature_shard(position, self._signature_shards), []).append(
                (position, tuple(doc.document), doc.signature))
        for shard, rows in by_shard.items():
            yield out(SIGS, (shard, (SIGS, rows)))


def edge_ends(_, parts, *, signature_shards: int):
    """A band shard's columns -> its candidate edges' ends, batched by signature shard."""
    ends: dict = {}
    for edge in lsh.sorted_neighbour_edges(parts):
        for position in edge:
            ends.setdefault(signature_shard(position, signature_shards), []).append(
                (position, edge))
    for shard, rows in ends.items():
        yield shard, (ENDS, rows)


def join_ends(shard, values, *, signature_shards: int):
    """A signature shard's (SIGS, rows) and (ENDS, rows) -> a ``Candidate`` row, scored here
    once, for each edge whose ends are both in this shard, and ``(CROSS, (edge, (node,
    signature)))`` per end of the other edges, to meet by edge: the only join of the
    signatures, one element per signature shard and bundle.

    Scoring where both ends meet keeps a chain's signatures off the shuffle: shipped once per
    end and edge, they made the by-edge grouping grow with a chain's candidate edges."""
    wanted: dict = {}  # a group's values can be iterated again: only the ends stay in memory
    inside: set = set()  # the edges with both ends here, each once however many bands gave it
    for kind, rows in values:
        if kind == ENDS:
            for position, edge in rows:
                if all(signature_shard(end, signature_shards) == shard for end in edge):
                    inside.add(edge)
                else:
                    wanted.setdefault(position, []).append(edge)
    here = {end for edge in inside for end in edge}
    found: dict = {}
    for kind, rows in values:
        if kind == SIGS:
            for position, node, signature in rows:
                if position in here:
                    found[position] = (node, signature)
                for edge in wanted.get(position, ()):
                    yield beam.pvalue.TaggedOutput(CROSS, (edge, (node, signature)))
    for edge in sorted(inside):
        yield scored(edge, (found[end] for end in edge))


def scored(edge, ends) -> tuple:
    """(edge, its ends' (Document, signature), repeated per band) -> a Candidate row."""
    found = {Document._make(node).position: (node, signature) for node, signature in ends}
    lower_end, upper_end = edge
    (lower, first), (upper, second) = found[lower_end], found[upper_end]
    return tuple(Candidate(lower=lower, upper=upper,
                           similarity=minhash.estimate_jaccard(first, second)))


def similarity(row) -> float:
    return Candidate._make(row).similarity


def cluster_sizes(centre_counts) -> dict:
    """Members per centre -> {cluster size (members + 1): clusters}, keys as strings."""
    sizes: dict[int, int] = {}
    for count in centre_counts:
        sizes[count + 1] = sizes.get(count + 1, 0) + 1
    return {str(size): sizes[size] for size in sorted(sizes)}


def example(edge) -> dict:
    candidate = Candidate._make(edge)
    return {"kept": list(Document._make(candidate.lower).position),
            "dropped": list(Document._make(candidate.upper).position),
            "jaccard": round(candidate.similarity, 4)}


def node_rows(node, roles):
    """A node's roles -> stats rows: ("size", its members) for a cluster's centre, and
    ("example", edge) for each verified edge from it when it is kept (not a member)."""
    members, member, edges = 0, False, []
    for kind, value in roles:
        if kind == "centre":
            members += 1
        elif kind == "member":
            member = True
        else:
            edges.append(value)
    if members:
        yield "size", members
    if not member:
        for edge in sorted(edges)[:EXAMPLES]:
            yield "example", edge


@dataclasses.dataclass
class NearCounts:
    """``StatsFn``'s accumulator."""

    candidates: int = 0
    verified: int = 0
    sizes: dict = dataclasses.field(default_factory=dict)  # members -> clusters
    examples: list = dataclasses.field(default_factory=list)  # the lowest Candidate rows

    def merge(self, other: NearCounts) -> None:
        self.candidates += other.candidates
        self.verified += other.verified
        for size, n in other.sizes.items():
            self.sizes[size] = self.sizes.get(size, 0) + n
        self.examples = sorted([*self.examples, *other.examples])[:EXAMPLES]


class StatsFn(beam.CombineFn):
    """Candidate rows (True when verified) and ``node_rows`` -> the ``totals.json`` dict."""

    def __init__(self, *, threshold: float):
        super().__init__()
        self._threshold = threshold

    def create_accumulator(self):
        return NearCounts()

    def add_input(self, acc, row):
        kind, value = row
        if kind == "candidate":
            acc.candidates += 1
            acc.verified += similarity(value) >= self._threshold
        elif kind == "size":
            acc.sizes[value] = acc.sizes.get(value, 0) + 1
        else:
            acc.examples = sorted([*acc.examples, value])[:EXAMPLES]
        return acc

    def merge_accumulators(self, accs):
        out = self.create_accumulator()
        for acc in accs:
            out.merge(acc)
        return out

    def extract_output(self, acc):
        return {"candidate_pairs": acc.candidates, "verified_pairs": acc.verified,
                "cluster_sizes": cluster_sizes(
                    count for count, n in sorted(acc.sizes.items()) for _ in range(n)),
                "examples": [example(e) for e in acc.examples]}


def _drop(_, node):
    doc = Document._make(node)
    return doc.file, (doc.line, NEAR_DUPLICATE)


def _take_back(_, node):
    doc = Document._make(node)
    return doc.subset, (-1, -doc.tokens)


def _by_lower(row):
    return Candidate._make(row).lower, ("edge", row)


class NearDuplicates(beam.PTransform):
    """PCollection[Signed] -> {drops, kept, stats}."""

    def __init__(self, *, options: NearDupOptions):
        super().__init__()
        lsh.rows_per_band(perm=options.perm, bands=options.bands)  # ValueError if uneven
        self._bands = options.bands
        self._threshold = options.threshold
        self._rounds = options.rounds
        self._band_shards = options.band_shards
        self._signature_shards = options.signature_shards

    def expand(self, survivors):
        threshold = self._threshold
        batches = survivors | "Batch" >> beam.ParDo(_BatchFn(
            bands=self._bands, band_shards=self._band_shards,
            signature_shards=self._signature_shards)).with_outputs(BANDS, SIGS)
        shards = self._signature_shards
        ends = (batches[BANDS] | "GroupByBandShard" >> beam.GroupByKey()
                | "EdgeEnds" >> beam.FlatMapTuple(
                    lambda key, parts: edge_ends(key, parts, signature_shards=shards)))
        joined = (
            (batches[SIGS], ends) | "SignaturesAndEnds" >> beam.Flatten()
            | "BySignatureShard" >> beam.GroupByKey()
            | "JoinEnds" >> beam.FlatMapTuple(
                lambda key, values: join_ends(key, values, signature_shards=shards)
            ).with_outputs(CROSS, main="inside"))
        across = joined[CROSS] | "ByEdge" >> beam.GroupByKey() | "Score" >> beam.MapTuple(scored)
        candidates = (joined.inside, across) | "Candidates" >> beam.Flatten()
        verified = candidates | "Verify" >> beam.Filter(lambda e: similarity(e) >= threshold)
        members = verified | "Components" >> Components(rounds=self._rounds)
        drops = members | "Drops" >> beam.MapTuple(_drop)
        kept = members | "TakeBack" >> beam.MapTuple(_take_back)
        return {"drops": drops, "kept": kept,
                "stats": self._stats(candidates, verified, members)}

    def _stats(self, candidates, verified, members):
        roles = (
            (members | "Roles" >> beam.FlatMapTuple(
                lambda centre, node: ((centre, ("centre", None)), (node, ("member", None)))),
             verified | "EdgeByLower" >> beam.Map(_by_lower))
            | "AllRoles" >> beam.Flatten() | "RolesByNode" >> beam.GroupByKey()
            | "NodeRows" >> beam.FlatMapTuple(node_rows))
        rows = candidates | "CandidateRows" >> beam.Map(lambda e: ("candidate", e))
        return ((roles, rows) | "AllRows" >> beam.Flatten()
                | "Stats" >> beam.CombineGlobally(StatsFn(threshold=self._threshold)))
