"""The manifest's data-quality sections, from the run's options and the data's statistics.

* ``doc_hashes`` (every split): the hash files of its written documents
  (``pipeline.quality.split_doc_hashes``).
* ``quality`` (``--dedup``, ``--exclude_docs_from``, ``--decontaminate``): normalization and
  digest, the sources, how many distinct hashes they held, the documents removed per reason
  and subset, and ``decontamination``: the n-gram scan's counts per evaluation set and subset.
* ``mixture`` (``--subset_weights``, ``--subset_tokens``): per subset the weight applied,
  documents and tokens before and after, and the resulting token share.
* ``shuffle`` (``--shuffle=global``): the seed, the algorithm, its blocks and windows.
"""

from __future__ import annotations

import collections

from pipeline.quality import decision_files, doc_hash, mixture
from pipeline.quality import split_doc_hashes as doc_hashes
from schemas import block_shuffle


def removed_by_subset(files, reasons) -> dict:
    """{reason: {subset: documents}} summed over the input files' ReadStats."""
    counts = {reason: collections.Counter() for reason in reasons}
    for stats in files:
        for (reason, subset), n in stats.filtered_by_subset.items():
            if reason in counts:
                counts[reason][subset] += n
    return {reason: dict(sorted(c.items())) for reason, c in counts.items()}


def quality_sections(run, *, files, before: dict, after: dict, hash_files: list) -> dict:
    """The sections above that apply (``run``: a ``pipeline.quality.prepare.QualityRun`` or
    None, whose ``plan`` says which; ``before``/``after``: subset -> SubsetStats before and
    after the mixture)."""
    out = {}
    if hash_files:
        out["doc_hashes"] = doc_hashes.manifest_entry(hash_files)
    if run is None:
        return out
    plan = run.plan
    if plan.exact_dedup or plan.exclude_docs_from or plan.decontaminate is not None:
        out["quality"] = {
            "normalization": doc_hash.NORMALIZATION,
            "digest": doc_hash.DIGEST,
            "dedup": plan.dedup,
            "exclude_docs_from": list(plan.exclude_docs_from),
            "excluded_hashes": run.excluded_hashes,
            "removed": removed_by_subset(files, (decision_files.DUPLICATE,
                                                 decision_files.CONTAMINATED)),
            "prepass_seconds": run.prepass_seconds,
        }
        if plan.near is not None:
            out["quality"]["removed"].update(
                removed_by_subset(files, (decision_files.NEAR_DUPLICATE,)))
            out["quality"]["near_dup"] = {**run.near_dup, "band_shards": plan.near.band_shards,
                                          "signature_shards": plan.near.signature_shards}
        if plan.decontaminate is not None:  # the pre-pass's scan: per evaluation set, subset
            out["quality"]["removed"].update(
                removed_by_subset(files, (decision_files.DECONTAMINATED,)))
            out["quality"]["decontamination"] = run.decontamination
    if plan.mixture:
        seen = set(before) | set(after)
        out["mixture"] = {
            "source": plan.mixture,
            "seed": plan.seed,
            "subsets": mixture.mixture_table(
                weights=run.weights, budgets=plan.budgets,
                before={name: s.to_json() for name, s in before.items()},
                after={name: s.to_json() for name, s in after.items()}),
            # Weights naming no subset of the input (for pile-v1, normal; else a typo?).
            "unmatched": sorted(set(run.weights) - seen),
            "filtered": removed_by_subset(files, (decision_files.MIXTURE,))[decision_files.MIXTURE],
        }
    if plan.shuffle:
        out["shuffle"] = {"mode": "global", "seed": plan.seed,
                          "algorithm": block_shuffle.ALGORITHM,
                          "block_records": plan.shuffle_spec.block_records,
                          "window_blocks": plan.shuffle_spec.window_blocks}
    return out


def roundtrip_refusal(doc: dict) -> str | None:
    """Why ``pipeline.roundtrip`` cannot compare this split with its input, or None: dropped,
    repeated or shuffled documents are not the input's documents in order."""
    changed = [name for name in ("quality", "mixture", "shuffle") if doc.get(name)]
    if not changed:
        return None
    return (f"the split was made with data-quality options ({', '.join(changed)} in its "
            "manifest): its documents are not the input's, in order, so a round trip cannot "
            "compare them; check it with python -m pipeline.verify --deep")
