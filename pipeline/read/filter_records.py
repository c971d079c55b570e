"""The quality filters (``--filters``, ``pipeline.filters``) as Parse applies them: the first
rule a parsed document fails, and the record of a removed document for the dead letters."""

from __future__ import annotations

import dataclasses

from pipeline.config import ReadConfig
from pipeline.filters import rules
from pipeline.filters.failure import Failure
from pipeline.read.parse import Document

FILTERED = "filtered"  # the records' reason, and ReadDocuments' output of them


@dataclasses.dataclass(frozen=True)
class FilterRecord:
    """A document a quality filter removed: where it was, and the first rule it failed."""

    file: str
    file_index: int
    chunk_index: int  # the records of one chunk are written together
    line: int
    offset: int
    subset: str
    rule: str
    detail: str  # the rule, what it measured and the threshold
    excerpt: str

    @property
    def reason(self) -> str:
        return FILTERED

    def to_json(self) -> dict:
        record = dataclasses.asdict(self)
        del record["chunk_index"]
        return {**record, "reason": FILTERED}


def failure_of(document: Document, config: ReadConfig) -> Failure | None:
    """The first rule of ``config``'s filters that ``document`` fails, or None."""
    active = config.filter_rules(document.subset)
    return rules.first_failure(document.text, active) if active else None
