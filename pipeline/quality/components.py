"""Connected components of candidate edges in Beam: the alternating large-star / small-star
algorithm (Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC 2014).

Nodes are any totally ordered values (here ``Document`` rows, ``pipeline.quality.records``, so
the order is the documents' (file, line)); an edge is a pair of nodes. One round is

* large-star: each node ``u`` links every larger neighbour to ``m``, the least of ``u`` and
  its neighbours (``large_star``), grouped by node;
* small-star: each node ``u`` links itself and its smaller neighbours to the least of them
  (``small_star``), grouped by the larger end of each edge.

Both keep the components and lower the nodes' parents; at the fixed point every component is
a star whose centre is its least node (``converged``). A Beam graph is static, so
``Components`` unrolls ``rounds`` rounds and then checks the fixed point: a component still
not a star fails the run with ``ComponentsNotConverged`` (never silently half-merged). The
rounds needed grow with the logarithm of a component's size (the paper's bound is
O(log^2 n)); ``rounds_needed`` measures them, ``DEFAULT_ROUNDS`` rounds merge chains of
thousands of near-duplicates, and candidate components of text are tiny.
"""

from __future__ import annotations

import apache_beam as beam

from common.errors import DataError
from pipeline.quality.records import Document

DEFAULT_ROUNDS = 12


class ComponentsNotConverged(DataError):
    """Candidate components too large to merge in the unrolled rounds."""


def _normalized(edges):
    return {(a, b) if a < b else (b, a) for a, b in edges if a != b}


def large_star(node, neighbours) -> list[tuple]:
    """Edges (v, m) for each neighbour v > node, m the least of node and its neighbours."""
    neighbours = set(neighbours)
    least = min(neighbours | {node})
    return [(least, v) for v in sorted(neighbours) if v > node and v != least]


def small_star(node, smaller) -> list[tuple]:
    """Edges (m, v) for v in node and its smaller neighbours, m the least of them."""
    members = set(smaller) | {node}
    least = min(members)
    return [(least, v) for v in sorted(members) if v != least]


def _round(edges: set) -> set:
    adjacent: dict = {}
    for a, b in edges:
        adjacent.setdefault(a, set()).add(b)
        adjacent.setdefault(b, set()).add(a)
    large = _normalized(e for u, vs in adjacent.items() for e in large_star(u, vs))
    smaller: dict = {}
    for a, b in large:
        smaller.setdefault(b, set()).add(a)
    return _normalized(e for u, vs in smaller.items() for e in small_star(u, vs))


def converged(edges) -> bool:
    """Whether ``edges`` (lower end first) form stars around their least nodes: no node is
    both the lower end of one edge and the upper end of another, and no upper end has two
    lower ones (two centres: one component not yet merged)."""
    lower, centre = {a for a, _ in edges}, {}
    for a, b in edges:
        if centre.setdefault(b, a) != a:
            return False
    return not lower & centre.keys()


def rounds_needed(edges, *, limit: int = 64) -> int:
    """Rounds until the fixed point, by the in-memory form of the same steps (tests, docs)."""
    current = _normalized(edges)
    for count in range(limit + 1):
        if converged(current):
            return count
        current = _round(current)
    raise ComponentsNotConverged(f"no fixed point after {limit} rounds")


def components(edges, *, rounds: int = DEFAULT_ROUNDS) -> dict:
    """node -> the least node of its component, for every node of an edge (in memory)."""
    current = _normalized(edges)
    for _ in range(rounds):
        current = _round(current)
    if not converged(current):
        raise ComponentsNotConverged(f"components not merged in {rounds} rounds")
    return {b: a for a, b in current} | {a: a for a, _ in current}


def _both_ways(edge):
    a, b = edge[0], edge[1]  # an edge may carry more (a Candidate's score): only its ends count
    yield a, b
    yield b, a


def _large_star_by_upper(node, neighbours):
    """``large_star``'s edges keyed by their upper end, ready for the small-star grouping."""
    for least, v in large_star(node, neighbours):
        yield v, least


def _small_star_both_ways(node, smaller):
    """``small_star``'s edges both ways, ready for the next round's large-star grouping."""
    for edge in small_star(node, smaller):
        yield from _both_ways(edge)


def _check(node, roles):
    """(node, [(role, other)]) -> (centre, node) for a member; a node that is a centre of
    one edge and a member of another, or a member of two centres, is a component not merged:
    an error."""
    kinds = {kind for kind, _ in roles}
    if len(kinds) > 1 or (kinds == {"upper"} and len({other for _, other in roles}) > 1):
        doc = Document._make(node)
        raise ComponentsNotConverged(
            f"near-duplicate candidates around document {(doc.file, doc.line)} (input file, "
            f"line) did not merge into one cluster in the unrolled rounds: a chain of "
            f"near-duplicates longer than they can merge; raise --near_dup_threshold to cut it")
    if kinds == {"upper"}:
        yield min(other for _, other in roles), node


class Components(beam.PTransform):
    """PCollection[(a, b)] edges -> PCollection[(centre, member)]: each node of an edge that
    is not the least of its component, with that least node (each member once)."""

    def __init__(self, *, rounds: int = DEFAULT_ROUNDS):
        super().__init__()
        self._rounds = rounds

    def expand(self, edges):
        # Each step emits keyed for the next grouping: 2 Map-like steps and 2 groupings a
        # round (the fixed per-transform cost of the Python SDK is most of this on text).
        current = edges | "BothWays" >> beam.FlatMap(_both_ways)
        for r in range(self._rounds):
            current = (
                current
                | f"ByNode{r}" >> beam.GroupByKey()
                | f"LargeStar{r}" >> beam.FlatMapTuple(_large_star_by_upper)
                | f"SmallerByUpper{r}" >> beam.GroupByKey()
                | f"SmallStar{r}" >> beam.FlatMapTuple(_small_star_both_ways)
            )
        # The result comes out of the fixed-point check, so nothing uses a half-merged one:
        # each edge arrives both ways, (lower, upper) and (upper, lower).
        return (
            current
            | "Roles" >> beam.MapTuple(
                lambda a, b: (a, ("lower", b)) if a < b else (a, ("upper", b)))
            | "RolesByNode" >> beam.GroupByKey()
            | "CheckStars" >> beam.FlatMapTuple(_check)
        )
