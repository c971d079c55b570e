"""The quality pre-pass's per-document records, named: a document's ``Position``, the
``Document`` that dedup decides on (near dedup's graph node), the ``Signed`` document that
near dedup compares, and a ``Candidate`` pair of near duplicates.

They order as tuples, so a ``Document`` orders by its position first (positions are unique):
of copies, the lowest (file, line) is the one kept.

In a PCollection they travel as plain tuples (``tuple(record)``), and the function that reads
one names it again (``Document._make(row)``, which also refuses a row of another length).
Beam's default coder (``FastPrimitivesCoder``) writes a plain tuple field by field but pickles
any tuple subclass: for 100k (file, line, subset, tokens) records, a NamedTuple took 4-9x the
time to encode and 2-4x to decode, and 2.7x the bytes as a value, 6x as a shuffle key
(``FindDrops`` shuffles one per document, ``Components`` one per edge and round); naming a
decoded row costs ~0.2 us.
"""

from __future__ import annotations

from typing import NamedTuple


class Position(NamedTuple):
    """Where a document is: its input file's index and its line."""

    file: int
    line: int


class Document(NamedTuple):
    """A document as the pre-pass decides on it."""

    file: int
    line: int
    subset: str
    tokens: int  # counted for --subset_tokens, else 0

    @property
    def position(self) -> Position:
        return Position(self.file, self.line)


class Signed(NamedTuple):
    """A ``Document``'s fields and its MinHash signature (``--dedup=near``; None: no words)."""

    file: int
    line: int
    subset: str
    tokens: int
    signature: bytes | None

    @property
    def position(self) -> Position:
        return Position(self.file, self.line)

    @property
    def document(self) -> Document:
        return Document(self.file, self.line, self.subset, self.tokens)


class Candidate(NamedTuple):
    """Two documents that met in a band (rows of ``Document``, the lower first) and their
    estimated Jaccard similarity. ``Components`` reads only the two ends."""

    lower: tuple
    upper: tuple
    similarity: float
