"""What a rerun may reuse: the fingerprint of everything a run's bytes depend on, and the
launcher's account of what it reused.

A dead run's committed chunks (``pipeline.write.committed_parts``) and pre-pass outputs
(``pipeline.quality.committed_prepass``) carry the fingerprint of the run that wrote them; a
rerun reuses them only when its own is the same. The trained tokenizer has its own
(``pipeline.tokenize.committed_model``), and its sha256 is part of this one.
"""

from __future__ import annotations

import hashlib
import json

from common import storage
from pipeline.read.inputs import file_version
from schemas import manifest as manifest_schema

# Raise when the bytes a run writes change for the same options and inputs.
FORMAT = 1
# Options that decide how a run goes, not what it writes (the output is byte-identical
# whatever they are): a change to them keeps what a dead run committed.
LAUNCH_ONLY = ("resume", "overwrite", "cancel_on_interrupt", "take_over_claim",
               "encode_processes", "encoder_threads", "fanout", "dry_run")


def run_fingerprint(*, config, inputs, plan, tokenizer_sha256: str) -> str:
    """sha256 of what a run's parts and pre-pass outputs depend on: ``config`` (a
    ``PipelineConfig``) but ``LAUNCH_ONLY``, each input's path, size and version (mtime or
    ETag), the files the data-quality ``plan`` reads besides, the tokenizer and the format
    versions. ``""`` when an input's version is unknown: a change could not be seen, so
    nothing is reused. Also ``""`` with ``--filters``: a chunk's filter records (one file per
    chunk) are not part of its committed record yet, so a replayed chunk would lose them."""
    if any(not f.version for f in inputs) or config.read.filters:
        return ""
    options = {k: v for k, v in config.to_json().items() if k not in LAUNCH_ONLY}
    doc = {"format": FORMAT, "manifest_version": manifest_schema.VERSION, "options": options,
           "inputs": [[f.path, f.bytes, f.version] for f in inputs],
           "quality_files": _quality_files(plan), "tokenizer": tokenizer_sha256}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _quality_files(plan) -> list:
    """Path, size and version of the evaluation sets and exclusion sources ``plan`` reads."""
    if plan is None:
        return []
    paths = [f.path for f in (plan.decontaminate.files if plan.decontaminate else ())]
    paths += [*plan.exclusion.hash_files, *(f.path for f in plan.exclusion.raw_files)]
    found = []
    for path in sorted(set(paths)):
        fs, stripped = storage.filesystem(path)
        info = fs.info(stripped)
        found.append([path, int(info.get("size") or 0), file_version(info)])
    return found


def reuse_line(doc: dict) -> str:
    """What the run reused, from its manifest's ``resume`` ("" when it reused nothing): a
    line of the run's summary, so that reuse is never silent."""
    resume = doc.get("resume")
    if not resume or not (resume["parts_reused"] or resume["prepass_reused"]
                          or resume["tokenizer_reused"]):
        return ""
    return (f"resume: reused {resume['parts_reused']} of {resume['parts_total']} chunk(s) a "
            "dead run committed; quality pre-pass "
            f"{'reused' if resume['prepass_reused'] else 'not reused'}; tokenizer "
            f"{'reused' if resume['tokenizer_reused'] else 'not reused'}")
