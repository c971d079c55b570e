"""The copies of one document (one hash), decided as a stream: which one is kept, which drop.

``GroupByHash`` groups ``(hash, Document)`` rows (``Signed`` with ``--dedup=near``) and the
``--exclude_docs_from`` hashes ``(hash, EXCLUDED)`` with one ``GroupByKey`` of tagged values,
never a ``CoGroupByKey`` (whose Python implementation makes a list of each tag's values: every
copy of a text repeated 10^6 times on one worker). ``decide_copies`` walks a group's values once,
holding only the lowest (file, line) so far; when a lower one comes, the one it replaces drops.
So a group of any size costs one record of memory, whatever the duplication.

Before the shuffle, ``LowestCopies`` (per bundle of ``pipeline.quality.prepass``'s
``KeyByHash``, without ``--exclude_docs_from``) keeps the lowest copy of each hash met so far
in a bounded table and drops the others at once: a copy beaten within its bundle is beaten
overall, so the decision is the same for any bundling, and only the table's copies (their
signatures computed only for them, with ``--dedup=near``) reach the shuffle.

Only a group that holds an excluded hash is walked twice: once to see the marker (which may
come last), then to drop every copy as ``contaminated``. Beam's grouped values are re-iterable
(lazily re-read from the shuffle on distributed runners), so this too holds no list.

    >>> rows = [(0, 5, "A", 3), (1, 2, "A", 3), (0, 1, "A", 3)]
    >>> list(decide_copies([(DOC, r) for r in rows], excluded=False, dedup=True, near=False))
    [(1, (2, 'duplicate')), (0, (5, 'duplicate')), kept (0, 1)]
"""

from __future__ import annotations

import apache_beam as beam

from pipeline.quality.decision_files import CONTAMINATED, DUPLICATE
from pipeline.quality.records import Document, Signed

DOC = "doc"
EXCLUDED = "excluded"
KEPT = "kept"
SURVIVORS = "survivors"


class Kept(tuple):
    """The group's keeper, yielded last by ``decide_copies`` (the record as a plain tuple)."""

    def __repr__(self) -> str:
        return f"kept ({self[0]}, {self[1]})"


def decide_copies(values, *, excluded: bool, dedup: bool, near: bool):
    """One hash's tagged values ``(DOC, row)`` (others are skipped) -> drops ``(file, (line,
    reason))`` and, last, the ``Kept`` keeper (none when ``excluded``; every document is kept,
    as ``Kept``, without ``dedup``). ``values`` is iterated once, holding one record."""
    make = Signed._make if near else Document._make
    best = None
    for tag, row in values:
        if tag != DOC:
            continue
        doc = make(row)
        if excluded:
            yield doc.file, (doc.line, CONTAMINATED)
        elif not dedup:
            yield Kept(row)
        elif best is None:
            best = doc
        elif doc.position < best.position:  # a lower (file, line): it is the one kept
            yield best.file, (best.line, DUPLICATE)
            best = doc
        else:
            yield doc.file, (doc.line, DUPLICATE)
    if best is not None:
        yield Kept(tuple(best))


class _DecideFn(beam.DoFn):
    """(hash, tagged values) -> drops (file, (line, reason)); tagged KEPT (subset, (1,
    tokens)), SURVIVORS (the keeper, with ``near``), EXCLUDED 1 per excluded hash."""

    def __init__(self, *, dedup: bool, near: bool, exclusions: bool):
        self._dedup = dedup
        self._near = near
        self._exclusions = exclusions

    def process(self, element):
        _, values = element
        # Without exclusion sources there is no marker to look for: one pass.
        excluded = self._exclusions and any(tag == EXCLUDED for tag, _ in values)
        if excluded:
            yield beam.pvalue.TaggedOutput(EXCLUDED, 1)
        make = Signed._make if self._near else Document._make
        for out in decide_copies(values, excluded=excluded, dedup=self._dedup, near=self._near):
            if not isinstance(out, Kept):
                yield out
                continue
            doc = make(out)
            yield beam.pvalue.TaggedOutput(KEPT, (doc.subset, (1, doc.tokens)))
            if self._near and self._dedup:
                yield beam.pvalue.TaggedOutput(SURVIVORS, tuple(out))


class LowestCopies:
    """A bundle's table: hash -> its lowest (file, line) copy met so far, as ``(position,
    row)``; at most ``limit`` hashes are held, then ``flush`` empties it (a hash met again
    later starts afresh: the grouping by hash decides between the copies flushed)."""

    def __init__(self, *, limit: int):
        self._limit = limit
        self._held: dict = {}

    def offer(self, key, position, make_row):
        """A copy of ``key`` at ``position`` (file, line) -> the drop ``(file, (line,
        DUPLICATE))`` it settles (itself, or the copy it beats), None when first of its hash.
        ``make_row()`` builds the row (its signature, say) only for a copy that is held."""
        held = self._held.get(key)
        if held is not None and held[0] < position:
            return position[0], (position[1], DUPLICATE)
        self._held[key] = (position, make_row())
        return None if held is None else (held[0][0], (held[0][1], DUPLICATE))

    @property
    def full(self) -> bool:
        return len(self._held) >= self._limit

    def flush(self) -> list:
        """The held copies as ``(hash, row)``; the table is empty after."""
        held, self._held = self._held, {}
        return [(key, row) for key, (_, row) in held.items()]


def _tag_doc(element):
    key, row = element
    return key, (DOC, row)


def _tag_excluded(element):
    key, _ = element
    return key, (EXCLUDED, None)


class DecideByHash(beam.PTransform):
    """``(docs, excluded)`` PCollections keyed by hash -> ``drops`` (main), ``KEPT``,
    ``SURVIVORS``, ``EXCLUDED`` (``_DecideFn``)."""

    def __init__(self, *, dedup: bool, near: bool, exclusions: bool):
        super().__init__()
        self._fn = _DecideFn(dedup=dedup, near=near, exclusions=exclusions)

    def expand(self, pcolls):
        docs, excluded = pcolls
        return (
            (docs | "TagDocs" >> beam.Map(_tag_doc),
             excluded | "TagExcluded" >> beam.Map(_tag_excluded))
            | "AllByHash" >> beam.Flatten()
            | "GroupByHash" >> beam.GroupByKey()
            | "Decide" >> beam.ParDo(self._fn).with_outputs(KEPT, EXCLUDED, SURVIVORS,
                                                             main="drops")
        )
