"""FineWeb's own rules (Penedo et al. 2024, "The FineWeb Datasets: Decanting the Web for the
Finest Text Data at Scale", Section 3.5 and Appendix), as DataTrove's
``FineWebQualityFilter`` computes them: over the non-blank lines, the share ending in terminal
punctuation, the share of short lines, the share of characters in duplicate lines, and
newlines per word.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.filters.failure import Failure, above, below
from pipeline.filters.words import TERMINAL_PUNCTUATION, find_duplicates

SHORT_LINE_CHARS = 30  # a line of at most this many characters is short


def check(text: str, words: list[str], active: Mapping[str, float]) -> Failure | None:
    """The first FineWeb rule ``text`` fails, or None (``active``: rule -> threshold).

    >>> check("one\\ntwo\\nthree.", ["one", "two", "three", "."], {"fineweb_list_ratio": 0.3})
    Failure(rule='fineweb_list_ratio', value=0.5, threshold=0.3)
    """
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:  # whitespace only: no line ends a sentence
        return below("fineweb_line_punct", 0.0, active)
    ended = sum(line.endswith(TERMINAL_PUNCTUATION) for line in lines) / len(lines)
    found = below("fineweb_line_punct", ended, active)
    if found:
        return found
    short = sum(len(line) <= SHORT_LINE_CHARS for line in lines) / len(lines)
    found = above("fineweb_short_lines", short, active)
    if found:
        return found
    if "fineweb_char_dup" in active:
        found = above("fineweb_char_dup",
                      find_duplicates(lines)[1] / len(text.replace("\n", "")), active)
        if found:
            return found
    newlines = text.count("\n")
    ratio = newlines / len(words) if words else (float("inf") if newlines else 0.0)
    return above("fineweb_list_ratio", ratio, active)
