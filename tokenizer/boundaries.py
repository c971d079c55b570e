"""Where a text can be cut without changing its SentencePiece BPE encoding.

SentencePiece escapes ``' '`` to ``'▁'`` (U+2581) and BPE then only merges adjacent symbols
into pieces of the vocabulary. A position between two characters is therefore a *safe
boundary* when no vocabulary piece could cover both sides of it: the encoding of the text is
then the encoding of the part before it followed by that of the part after it.

With the options in ``tokenizer.spec`` three kinds of position are safe, each checked on the
vocabulary itself rather than assumed (``boundary_rules``):

* before a space that follows a non-space: no piece has ``'▁'`` after a non-``'▁'`` character
  (SentencePiece only lets ``'▁'`` start a piece, or form all of it);
* on either side of a digit 0-9: ``split_digits`` keeps every digit a piece of its own;
* on either side of NUL: SentencePiece never puts NUL in a piece, it is always ``<0x00>``.

A *word* is what lies between safe boundaries: a run of spaces followed by non-spaces (``"▁▁def"``
is one word: ``"▁▁"`` + ``"▁def"`` or ``"▁▁▁"`` + ``"def"`` is for BPE to decide), a lone digit, a
lone NUL, or trailing spaces. Newline and tab are ordinary characters: pieces like ``":\\n"`` span
them, so they are never boundaries.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from tokenizer.spec import SPACE_SYMBOL

_DIGITS = frozenset("0123456789")
_UTF8_SPACE_SYMBOL = SPACE_SYMBOL.encode("utf-8")


@dataclasses.dataclass(frozen=True)
class BoundaryRules:
    """Which safe boundaries a vocabulary allows (see module docstring)."""

    spaces: bool
    digits: bool
    nul: bool


def boundary_rules(pieces: Iterable[str]) -> BoundaryRules:
    """Check the three boundary properties on the pieces text can be matched against.

    Args:
      pieces: Surface forms of the normal, user-defined and unused pieces; leave out byte,
        control and unknown pieces, which input text never matches.

    Returns:
      The boundaries that no piece spans.
    """
    spaces = digits = nul = True
    for piece in pieces:
        body = piece.lstrip(SPACE_SYMBOL)
        if SPACE_SYMBOL in body:
            spaces = False
        if len(piece) > 1 and not _DIGITS.isdisjoint(piece):
            digits = False
        if "\x00" in piece:
            nul = False
    return BoundaryRules(spaces=spaces, digits=digits, nul=nul)


def word_pattern(*, digits: bool, nul: bool, space_symbol: bool) -> re.Pattern[str]:
    """A regex whose ``findall`` splits a text into words at safe boundaries.

    The matches concatenate back to the text. Every match is non-empty.

    Args:
      digits: Also cut on both sides of each digit 0-9.
      nul: Also cut on both sides of each NUL.
      space_symbol: Treat U+2581 as a space too (SentencePiece does); only needed for texts
        that contain it, and slower, so callers pick this pattern per text.
    """
    spaces = " \u2581" if space_symbol else " "
    singles = ("0-9" if digits else "") + ("\\x00" if nul else "")
    # The common case first: the regex engine tries alternatives in order.
    parts = [f"[{spaces}]*[^{spaces}{singles}]+"]
    parts += [f"[{singles}]"] if singles else []
    parts += [f"[{spaces}]+"]  # only reached when no word character follows the spaces
    return re.compile("|".join(parts))


def cut_text(text: str, *, max_bytes: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``max_bytes`` UTF-8 bytes at space-word boundaries.

    Cuts go before a run of spaces that follows a non-space, so the pieces encode exactly like
    the whole (for a vocabulary with ``BoundaryRules.spaces``). A run of non-spaces longer than
    ``max_bytes`` (minified code, base64) is cut at a character boundary instead, which can
    change its encoding slightly.

    Example: ``cut_text("ab  cd ef", max_bytes=5) == ["ab", "  cd", " ef"]``.

    Args:
      text: Any string.
      max_bytes: Upper bound on each piece's UTF-8 length; at least 4 (one character).

    Returns:
      Non-empty pieces that concatenate to ``text`` (no pieces for an empty text).
    """
    if max_bytes < 4:
        raise ValueError(f"max_bytes={max_bytes} must be at least 4 (one UTF-8 character)")
    return _cut(text, max_bytes=max_bytes, inside_runs=True)


def cut_at_spaces(text: str, *, max_bytes: int) -> list[str]:
    """Cut ``text`` at space-word boundaries only, into pieces of at most ``max_bytes`` UTF-8
    bytes where one falls within that: exact for any text (a vocabulary with
    ``BoundaryRules.spaces``), unlike ``cut_text``, whose cut inside a long run of non-spaces
    is not. A run with no such boundary stays whole, however long.

    Example: ``cut_at_spaces("abcdefg hi", max_bytes=4) == ["abcdefg", " hi"]``.
    """
    return _cut(text, max_bytes=max_bytes, inside_runs=False)


def _cut(text: str, *, max_bytes: int, inside_runs: bool) -> list[str]:
    """Pieces cut at space-word boundaries; where none is within ``max_bytes``, at a character
    boundary (``inside_runs``) or at the next space-word boundary however far."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return [text] if text else []
    pieces = []
    start = 0
    while len(data) - start > max_bytes:
        cut = _space_cut(data, start, start + max_bytes)
        if cut <= start and inside_runs:
            cut = start + max_bytes
            while data[cut] & 0xC0 == 0x80:  # never inside a UTF-8 sequence
                cut -= 1
        elif cut <= start:
            cut = _next_space_cut(data, start + max_bytes)
            if cut < 0:
                break
        pieces.append(data[start:cut].decode("utf-8"))
        start = cut
    pieces.append(data[start:].decode("utf-8"))
    return pieces


def _next_space_cut(data: bytes, start: int) -> int:
    """Smallest cut at or after ``start`` before a space that follows a non-space, else -1."""
    pos = start
    while True:
        pos = data.find(b" ", pos)
        if pos < 0:
            return -1
        before = data[pos - 1]
        if before != 0x20 and not (pos >= 3 and data[pos - 3:pos] == _UTF8_SPACE_SYMBOL):
            return pos
        pos += 1


def _space_cut(data: bytes, start: int, limit: int) -> int:
    """Largest cut in (start, limit] before a space run that follows a non-space, else -1."""
    pos = data.rfind(b" ", start + 1, limit + 1)
    if pos < 0:
        return -1
    # Walk back to the start of this run of spaces ('▁' counts as a space too).
    while pos > start:
        if data[pos - 1] == 0x20:
            pos -= 1
        elif pos - 3 >= start and data[pos - 3 : pos] == _UTF8_SPACE_SYMBOL:
            pos -= 3
        else:
            return pos
    return -1  # the run reaches back to ``start``: no non-space before it in the window
