"""The manifest's ``filters`` section (``--filters``): the options, the rules applied to each
subset with their thresholds, the documents each rule removed per subset, and the files of
filter records (``pipeline.write.dead_letters``)."""

from __future__ import annotations

import collections
import json

from pipeline.config import ReadConfig
from pipeline.filters.rules import RULES


def filter_section(config: ReadConfig, *, files, subsets, record_files) -> dict:
    """``{"filters": {...}}``, or ``{}`` without ``--filters``. ``files``: the input files'
    ReadStats; ``subsets``: the subsets written; ``record_files``: the FilterRecordFiles."""
    if not config.filters:
        return {}
    removed = collections.defaultdict(collections.Counter)
    for stats in files:
        for (reason, subset), n in stats.filtered_by_subset.items():
            if reason in RULES:
                removed[reason][subset] += n
    seen = sorted(set(subsets) | {s for counts in removed.values() for s in counts})
    return {"filters": {
        "filters": list(config.filters),
        "profile": config.filter_profile,
        "thresholds": json.loads(config.filter_thresholds or "{}"),
        "subset_overrides": json.loads(config.filter_subsets or "{}"),
        "applied": {subset: config.filter_rules(subset) for subset in seen},
        "removed": {rule: dict(sorted(removed[rule].items())) for rule in RULES
                    if rule in removed},
        "documents_removed": sum(sum(c.values()) for c in removed.values()),
        "records": [f.to_json() for f in sorted(record_files, key=lambda f: f.path)],
    }}
