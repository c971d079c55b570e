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
``Components`` unrolls ``rounds`` rounds and then finishes whatever is not yet a star with a
residual union-find (``residual``): the edges at a node that is still tangled (both a centre
and a member, or a member of two centres) go to one place and are merged there, and the
stars hanging off them take the merged centre. So any graph converges, whatever its shape or
order; the rounds only decide how small the residual is. They grow with the logarithm of a
component's size (the paper's bound is O(log^2 n)); ``rounds_needed`` measures them, and
after ``DEFAULT_ROUNDS`` rounds only chains of thousands of near-duplicates leave a residual
(a few edges per tangled node).
"""

from __future__ import annotations

import apache_beam as beam

from common.errors import DataError

DEFAULT_ROUNDS = 12


class ComponentsNotConverged(DataError):
    """``rounds_needed`` found no fixed point within its limit (in-memory measurement only)."""


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


def residual(edges) -> dict:
    """node -> the least node of its component by union-find (each root is its set's least
    node), for every node of an edge: the merge of what the rounds left tangled."""
    parent: dict = {}

    def root(node):
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]  # path halving keeps the trees shallow
            node = parent[node]
        return node

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {node: root(node) for node in list(parent)}


def components(edges, *, rounds: int = DEFAULT_ROUNDS) -> dict:
    """node -> the least node of its component, for every node of an edge (in memory): the
    Beam transform's steps, ``rounds`` rounds and then the residual union-find."""
    current = _normalized(edges)
    for _ in range(rounds):
        current = _round(current)
    return residual(current)


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


MEMBER, TANGLED = "member", "tangled"


def _roles(a, b):
    return (a, ("lower", b)) if a < b else (a, ("upper", b))


def _classify(node, roles):
    """(node, [(role, other)]) after the rounds -> (MEMBER, (centre, node)) for a member of
    one centre, or (TANGLED, (node, lower)) per smaller neighbour of a node that is both a
    centre and a member or a member of two centres: those edges are what the residual merges.

    Every tangled node has a smaller neighbour, so the residual reaches it; a member's only
    edge is to its centre, so no member is in the residual (each node comes out once)."""
    roles = list(roles)
    kinds = {kind for kind, _ in roles}
    lowers = {other for kind, other in roles if kind == "upper"}
    if kinds == {"upper"} and len(lowers) == 1:
        yield MEMBER, (min(lowers), node)
    elif kinds != {"lower"}:
        for other in sorted(lowers):
            yield TANGLED, (node, other)


def _merged(edges):
    """The residual edges (all in one list) -> (node, least node) for each node of them."""
    yield from sorted(residual(edges).items())


def _final(row, roots):
    """A star's member takes its centre's root when the residual merged that centre."""
    centre, member = row[1]
    return roots.get(centre, centre), member


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
        # Each edge arrives both ways, (lower, upper) and (upper, lower): a node's roles say
        # whether it is a finished star's member or still tangled.
        classified = (
            current
            | "Roles" >> beam.MapTuple(_roles)
            | "RolesByNode" >> beam.GroupByKey()
            | "Classify" >> beam.FlatMapTuple(_classify)
        )
        members = classified | "Members" >> beam.Filter(lambda row: row[0] == MEMBER)
        # The tangled edges meet in one list: only what the rounds left unmerged (none once
        # every component is a star), so its size is that of the unfinished chains.
        roots = (
            classified
            | "Tangled" >> beam.Filter(lambda row: row[0] == TANGLED)
            | "TangledEdges" >> beam.Map(lambda row: row[1])
            | "AllTangled" >> beam.combiners.ToList()
            | "Residual" >> beam.FlatMap(_merged)
        )
        settled = members | "Settle" >> beam.Map(_final, roots=beam.pvalue.AsDict(roots))
        merged = (
            roots
            | "MergedMembers" >> beam.Filter(lambda row: row[0] != row[1])
            | "CentreFirst" >> beam.MapTuple(lambda node, least: (least, node))
        )
        return (settled, merged) | "AllMembers" >> beam.Flatten()
