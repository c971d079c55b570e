"""Which sampled documents the quality pre-pass would drop, and why, for ``--dry_run``.

The pre-pass's order (``pipeline.quality.prepass``), on the sampled documents only:

1. ``--decontaminate``: a document holding an evaluation n-gram drops (``decontaminated``;
   with ``--decontaminate_mode=redact`` only one the cut leaves blank, the others are
   redacted and stay). A per-document test: the sample's share is an estimate of the file's
   as good as its start is like the rest; exact for a file read to its end.
2. ``--dedup=exact`` or ``near``: in (input file, line) order, a document whose hash came
   before drops (``duplicate``).
3. ``--dedup=near``: the survivors' MinHash signatures (computed while sampling, with the
   run's ``--minhash_perm`` and ``--shingle_words``) banded as the run bands them
   (``pipeline.quality.lsh``), each band group's star edges verified at
   ``--near_dup_threshold`` (``pipeline.quality.minhash.estimate_jaccard``) and merged into
   components (``pipeline.quality.components``): every member but the lowest (file, line)
   drops (``near_duplicate``).

Duplicates are found *within the sample* only: a document whose copy lies past the sampled
start of its file, or in a file not sampled, is not seen. Adding documents only adds edges
and merges clusters, so every sampled document dropped here is dropped by the run too (as one
kind of duplicate or the other): the sample's share of duplicates is a lower bound of the
run's, exact when every input is read to its end. If copies are spread evenly over the input,
a sample that is a fraction ``f`` of it sees about ``f`` of the pairs.
"""

from __future__ import annotations

import collections
import dataclasses

from pipeline.launch.dry_run.sample import FileSample
from pipeline.quality import components, lsh, minhash
from pipeline.quality.decision_files import DECONTAMINATED, DUPLICATE, NEAR_DUPLICATE
from pipeline.quality.near_dup import NearDupOptions, cluster_sizes
from pipeline.quality.plan import QualityPlan


@dataclasses.dataclass(frozen=True)
class NearSample:
    """``--dedup=near`` within the sample (the manifest's ``quality.near_dup`` counts)."""

    documents: int  # signed exact survivors compared
    candidate_pairs: int
    verified_pairs: int
    cluster_sizes: dict  # size (str) -> clusters


@dataclasses.dataclass(frozen=True)
class ContaminationSample:
    """``--decontaminate`` within the sample: sampled documents per evaluation set, redacted
    ones (they stay), and the spans and characters cut from them."""

    per_set: dict  # evaluation set -> sampled documents holding its n-grams
    redacted: int
    spans: int
    characters: int


@dataclasses.dataclass(frozen=True)
class SampleDrops:
    reasons: dict  # input file index -> {line: reason} of the sampled documents that drop
    near: NearSample | None = None
    contamination: ContaminationSample | None = None


def _contamination(samples: list[FileSample], names) -> ContaminationSample:
    per_set = dict.fromkeys(names, 0)
    redacted = spans = characters = 0
    for doc in (d for s in samples for d in s.docs if d.contamination is not None):
        found = doc.contamination
        for index in found.sets:
            per_set[names[index]] += 1
        redacted += not found.dropped
        spans += found.spans
        characters += found.characters
    return ContaminationSample(per_set=per_set, redacted=redacted, spans=spans,
                               characters=characters)


def near_duplicates(signatures: dict, *, options: NearDupOptions) -> tuple[dict, NearSample]:
    """(file, line) -> signature of the exact survivors -> ((file, line) -> the lowest
    (file, line) of its cluster, for every member that drops; the counts)."""
    groups = collections.defaultdict(list)
    for node, signature in signatures.items():
        for key in lsh.band_keys(signature, bands=options.bands):
            groups[key].append(node)
    candidates = {edge for members in groups.values() for edge in lsh.neighbour_edges(members)}
    verified = [(a, b) for a, b in sorted(candidates)
                if minhash.estimate_jaccard(signatures[a], signatures[b]) >= options.threshold]
    centres = components.components(verified, rounds=options.rounds)
    members = {node: centre for node, centre in centres.items() if node != centre}
    sizes = cluster_sizes(collections.Counter(members.values()).values())
    return members, NearSample(documents=len(signatures), candidate_pairs=len(candidates),
                               verified_pairs=len(verified), cluster_sizes=sizes)


def sample_drops(samples: list[FileSample], *, plan: QualityPlan) -> SampleDrops:
    """The reasons the sampled documents drop for, in the pre-pass's order (module docstring),
    for the stages ``plan`` runs."""
    reasons: dict = {s.file.index: {} for s in samples}
    seen, signatures = set(), {}
    for sample in sorted(samples, key=lambda s: s.file.index):
        dropped = reasons[sample.file.index]
        for doc in sample.docs:
            if doc.contamination is not None and doc.contamination.dropped:
                dropped[doc.line] = DECONTAMINATED
            elif plan.exact_dedup and doc.digest in seen:
                dropped[doc.line] = DUPLICATE
            else:
                seen.add(doc.digest)
                if doc.signature is not None:
                    signatures[(sample.file.index, doc.line)] = doc.signature
    near = None
    if plan.near is not None:
        members, near = near_duplicates(signatures, options=plan.near)
        for file, line in members:
            reasons[file][line] = NEAR_DUPLICATE
    contamination = (_contamination(samples, plan.decontaminate.names)
                     if plan.decontaminate is not None else None)
    return SampleDrops(reasons=reasons, near=near, contamination=contamination)
