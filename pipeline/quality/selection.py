"""What the main pipeline's Parse keeps: the pre-pass's drops, and each document's copies.

``Selection.apply_chunk`` applies it to one chunk. A file's decision file
(``pipeline.quality.decision_files``) is loaded once per worker; a document listed there is filtered
with its reason (``duplicate``, ``contaminated``, ...); one marked ``redacted`` is kept, less
the character spans its decision lists (``pipeline.quality.ngrams.cut``). With mixture weights
each remaining document gets its repeat count (``pipeline.quality.mixture``); a count of 0 is
filtered as ``mixture`` but stays in its chunk, so that it is tokenized once and counted in the
mixture's "before" totals without being written. The chunk's ``ReadStats`` is corrected so that
``read = written + filtered + rejected`` still holds, and counts each reason per subset.
"""

from __future__ import annotations

import dataclasses

from common.errors import DataError
from pipeline.quality import mixture, ngrams
from pipeline.quality.decision_files import MIXTURE, REDACTED, Decisions
from pipeline.read.stage import Chunk, ReadStats


@dataclasses.dataclass(frozen=True)
class Selection:
    """The main pipeline's part of the data-quality options (constructor data, no side
    inputs): where the decision files are, and the mixture weights."""

    decisions: str | None = None  # directory of the pre-pass's decision files
    weights: dict = dataclasses.field(default_factory=dict)  # epochs per subset; {}: none
    seed: int = 0

    def apply_chunk(self, chunk: Chunk, stats: ReadStats, *,
                    decisions: dict[int, Decisions]) -> Chunk | None:
        """One chunk with the selection applied (None: no document left); ``stats`` (the
        chunk's own counts) corrected to match. ``decisions``: a cache of loaded decision
        files by input file index, filled as needed."""
        found = None
        if self.decisions:
            found = decisions.get(chunk.file_index)
            if found is None:
                found = decisions[chunk.file_index] = Decisions.load(self.decisions,
                                                                     chunk.file_index)
        kept, repeats = [], []
        for doc in chunk.documents:
            reason = found.reason(doc.line) if found is not None else None
            if reason == REDACTED:  # kept, without its evaluation n-grams
                text = _cut(doc, found.spans(doc.line), path=stats.path)
                doc = dataclasses.replace(doc, text=text, text_bytes=len(text.encode("utf-8")))
                reason = None
            if reason is None and self.weights:
                count = mixture.repeat_count(self.weights, subset=doc.subset, seed=self.seed,
                                             file_index=chunk.file_index, line=doc.line)
                reason = MIXTURE if count == 0 else None
                kept.append(doc)
                repeats.append(count)
            elif reason is None:
                kept.append(doc)
            if reason is not None:
                stats.documents -= 1
                stats.filtered[reason] += 1
                stats.filtered_by_subset[(reason, doc.subset)] += 1
        if not kept:
            return None
        return dataclasses.replace(chunk, documents=tuple(kept),
                                   repeats=tuple(repeats) if self.weights else ())



def _cut(doc, spans, *, path: str) -> str:
    """``doc``'s text less the pre-pass's ``spans`` (character offsets into the same text)."""
    if len(spans) and spans[-1, 1] > len(doc.text):  # not the text the pre-pass read
        raise DataError(f"{path} line {doc.line}: the quality pre-pass cut characters up to "
                        f"{int(spans[-1, 1])} of a {len(doc.text)}-character document (the "
                        "file changed during the run?): rerun")
    return ngrams.cut(doc.text, spans)
