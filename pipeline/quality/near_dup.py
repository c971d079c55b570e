"""``--dedup=near``: the near-duplicates among the exact dedup's survivors, in Beam.

``NearDuplicates`` takes the survivors as ``(file, line, subset, tokens, signature)`` tuples
(``signature``: ``pipeline.quality.minhash``, None for a document without words) and

1. ``Band``: each signature's band keys (``pipeline.quality.lsh``) -> ``GroupByBand`` -> per
   band group, edges from its lowest document to each other one (a star: ``n - 1`` edges);
2. ``Verify``: joins both ends' signatures by document (two ``CoGroupByKey``: one shuffle of
   the signatures each, instead of a copy of the signature in each of ``bands`` band
   elements) and keeps the edges whose estimated Jaccard is at least ``threshold``;
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

from pipeline.quality import lsh, minhash
from pipeline.quality.components import DEFAULT_ROUNDS, Components
from pipeline.quality.decisions import NEAR_DUPLICATE

EXAMPLES = 5


@dataclasses.dataclass(frozen=True)
class NearDupOptions:
    """``--near_dup_threshold``, ``--minhash_perm``, ``--minhash_bands``, ``--shingle_words``."""

    threshold: float = 0.8
    perm: int = 128
    bands: int = 16
    shingle_words: int = 5
    rounds: int = DEFAULT_ROUNDS

    @property
    def minhash(self) -> minhash.MinHashOptions:
        return minhash.MinHashOptions(perm=self.perm, shingle_words=self.shingle_words)

    @classmethod
    def from_config(cls, quality) -> "NearDupOptions":
        """From a ``pipeline.config.QualityConfig``."""
        return cls(threshold=quality.near_dup_threshold, perm=quality.minhash_perm,
                   bands=quality.minhash_bands, shingle_words=quality.shingle_words)


def band_elements(doc, *, bands: int):
    """(file, line, subset, tokens, signature) -> (band key, node) per band."""
    if doc[4] is None:
        return []
    node = tuple(doc[:4])
    return [(key, node) for key in lsh.band_keys(doc[4], bands=bands)]


def _outgoing(node, groups):
    """(lower, {sig, out}) -> (upper, (lower, lower's signature)) per edge."""
    signature = next(iter(groups["sig"]))
    for upper in set(groups["out"]):
        yield upper, (node, signature)


def _verified(node, groups, *, threshold: float):
    """(upper, {sig, in}) -> (lower, upper, estimated Jaccard) at or above ``threshold``."""
    signature = next(iter(groups["sig"]))
    for lower, other in groups["in"]:
        similarity = minhash.estimate_jaccard(other, signature)
        if similarity >= threshold:
            yield lower, node, similarity


def cluster_sizes(centre_counts) -> dict:
    """Members per centre -> {cluster size (members + 1): clusters}, keys as strings."""
    sizes: dict[int, int] = {}
    for count in centre_counts:
        sizes[count + 1] = sizes.get(count + 1, 0) + 1
    return {str(size): sizes[size] for size in sorted(sizes)}


def example(edge) -> dict:
    lower, upper, similarity = edge
    return {"kept": list(lower[:2]), "dropped": list(upper[:2]),
            "jaccard": round(similarity, 4)}


def _stats(rows) -> dict:
    out = {"candidate_pairs": 0, "verified_pairs": 0, "cluster_sizes": {}, "examples": []}
    for name, value in rows:
        out[name] = value
    return out


def _kept_ends(node, groups):
    """Edges whose lower end is not a member of a cluster: its kept document."""
    if not any(True for _ in groups["member"]):
        yield from groups["edge"]


class NearDuplicates(beam.PTransform):
    """PCollection[(file, line, subset, tokens, signature)] -> {drops, kept, stats}."""

    def __init__(self, *, options: NearDupOptions):
        super().__init__()
        lsh.rows_per_band(perm=options.perm, bands=options.bands)  # ValueError if uneven
        self._bands = options.bands
        self._threshold = options.threshold
        self._rounds = options.rounds

    def expand(self, survivors):
        bands = self._bands
        candidates = (
            survivors
            | "Band" >> beam.FlatMap(band_elements, bands=bands)
            | "GroupByBand" >> beam.GroupByKey()
            | "StarEdges" >> beam.FlatMapTuple(lambda _, nodes: lsh.star_edges(nodes))
            | "DistinctEdges" >> beam.Distinct()
        )
        verified = self._verify(survivors, candidates)
        members = (verified | "Edges" >> beam.Map(lambda e: (e[0], e[1]))
                   | "Components" >> Components(rounds=self._rounds))
        drops = members | "Drops" >> beam.MapTuple(
            lambda _, node: (node[0], (node[1], NEAR_DUPLICATE)))
        kept = members | "TakeBack" >> beam.MapTuple(lambda _, node: (node[2], (-1, -node[3])))
        return {"drops": drops, "kept": kept,
                "stats": self._stats(candidates, verified, members)}

    def _verify(self, survivors, candidates):
        threshold = self._threshold
        signatures = (survivors | "WithSignature" >> beam.Filter(lambda d: d[4] is not None)
                      | "SignatureByNode" >> beam.Map(lambda d: (tuple(d[:4]), d[4])))
        outgoing = (
            {"sig": signatures, "out": candidates}
            | "JoinLower" >> beam.CoGroupByKey()
            | "ToUpper" >> beam.FlatMapTuple(_outgoing)
        )
        return (
            {"sig": signatures, "in": outgoing}
            | "JoinUpper" >> beam.CoGroupByKey()
            | "Verify" >> beam.FlatMapTuple(
                lambda node, groups: _verified(node, groups, threshold=threshold))
        )

    def _stats(self, candidates, verified, members):
        sizes = (members | "CountPerCentre" >> beam.combiners.Count.PerKey()
                 | "Counts" >> beam.Values()
                 | "AllCounts" >> beam.combiners.ToList()
                 | "Sizes" >> beam.Map(lambda counts: ("cluster_sizes", cluster_sizes(counts))))
        examples = (
            {"edge": verified | "EdgeByLower" >> beam.Map(lambda e: (e[0], e)),
             "member": members | "MemberByNode" >> beam.MapTuple(lambda _, node: (node, None))}
            | "JoinKept" >> beam.CoGroupByKey()
            | "KeptEnds" >> beam.FlatMapTuple(_kept_ends)
            | "Lowest" >> beam.combiners.Top.Smallest(EXAMPLES, key=lambda e: (e[0], e[1]))
            | "Examples" >> beam.Map(lambda edges: ("examples", [example(e) for e in edges])))
        counts = [
            (pc | f"Count{name}" >> beam.combiners.Count.Globally()
             | f"Name{name}" >> beam.Map(lambda n, name=name: (name, n)))
            for name, pc in (("candidate_pairs", candidates), ("verified_pairs", verified))]
        return ((sizes, examples, *counts) | "AllStats" >> beam.Flatten()
                | "StatRows" >> beam.combiners.ToList() | "Stats" >> beam.Map(_stats))
