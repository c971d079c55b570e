"""What the main pipeline's Read keeps: the pre-pass's drops, and each document's copies.

``select`` wraps ``pipeline.read.read_file``'s output for one input file. It loads the file's
decision file once (``pipeline.quality_files``) and walks it alongside the documents (both in
line order): a document listed there is filtered with its reason (``duplicate``,
``contaminated``). With mixture weights each remaining document gets its repeat count
(``pipeline.mixture``); a count of 0 is filtered as ``mixture`` but stays in its chunk, so that
it is tokenized once and counted in the mixture's "before" totals without being written.
The file's ``ReadStats`` (yielded last) is corrected so that ``read = written + filtered +
rejected`` still holds, and counts each reason per subset.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Iterator

from pipeline import mixture
from pipeline.inputs import InputFile
from pipeline.quality_files import MIXTURE, Decisions
from pipeline.read import Chunk, ReadStats


@dataclasses.dataclass(frozen=True)
class Selection:
    """The main pipeline's part of the data-quality options (constructor data, no side
    inputs): where the decision files are, and the mixture weights."""

    decisions: str | None = None  # directory of the pre-pass's decision files
    weights: dict = dataclasses.field(default_factory=dict)  # epochs per subset; {}: none
    seed: int = 0

    def apply(self, file: InputFile, items) -> Iterator:
        return select(file, items, selection=self)


def select(file: InputFile, items, *, selection: Selection) -> Iterator:
    """``read_file(file, ...)``'s items with the selection applied (see the module doc)."""
    decisions = Decisions.load(selection.decisions, file.index) if selection.decisions else None
    dropped: collections.Counter = collections.Counter()
    by_subset: collections.Counter = collections.Counter()
    for item in items:
        if isinstance(item, Chunk):
            kept, repeats = [], []
            for doc in item.documents:
                reason = decisions.reason(doc.line) if decisions is not None else None
                if reason is None and selection.weights:
                    count = mixture.repeat_count(selection.weights, subset=doc.subset,
                                                 seed=selection.seed, file_index=file.index,
                                                 line=doc.line)
                    reason = MIXTURE if count == 0 else None
                    kept.append(doc)
                    repeats.append(count)
                elif reason is None:
                    kept.append(doc)
                if reason is not None:
                    dropped[reason] += 1
                    by_subset[(reason, doc.subset)] += 1
            if kept:
                yield dataclasses.replace(item, documents=tuple(kept),
                                          repeats=tuple(repeats) if selection.weights else ())
        elif isinstance(item, ReadStats):
            item.documents -= sum(dropped.values())
            item.filtered.update(dropped)
            item.filtered_by_subset.update(by_subset)
            yield item
        else:
            yield item
