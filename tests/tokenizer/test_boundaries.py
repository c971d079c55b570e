import random

import pytest

from tokenizer.boundaries import (
    BoundaryRules,
    boundary_rules,
    cut_at_spaces,
    cut_text,
    word_pattern,
)


def test_cut_text_docstring_example():
    assert cut_text("ab  cd ef", max_bytes=5) == ["ab", "  cd", " ef"]


def test_cut_text_keeps_short_texts_whole():
    assert cut_text("ab cd", max_bytes=5) == ["ab cd"]
    assert cut_text("", max_bytes=5) == []


def test_cut_text_cuts_long_runs_at_character_boundaries():
    assert cut_text("中" * 5, max_bytes=7) == ["中中", "中中", "中"]
    assert cut_text("   abcdef", max_bytes=4) == ["   a", "bcde", "f"]


def test_cut_text_never_cuts_after_a_space_symbol():
    # "a▁ b": a cut before " " would split the space run "▁ ".
    assert cut_text("a\u2581 bcd", max_bytes=7) == ["a", "\u2581 bcd"]


def test_cut_text_rejects_tiny_limits():
    with pytest.raises(ValueError, match="at least 4"):
        cut_text("abc", max_bytes=3)


def _random_texts(seed: int, count: int):
    """(text, limit) pairs over an alphabet of spaces, U+2581, tabs, CJK, emoji and digits."""
    rng = random.Random(seed)
    alphabet = "ab  \t\n▁中😀0"
    for _ in range(count):
        yield ("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 300))),
               rng.randrange(4, 40))


def test_cut_text_pieces_fit_and_concatenate_back():
    for text, limit in _random_texts(0, 200):
        pieces = cut_text(text, max_bytes=limit)
        assert "".join(pieces) == text
        assert all(0 < len(p.encode()) <= limit for p in pieces)


def test_cut_at_spaces_docstring_example_and_short_texts():
    assert cut_at_spaces("abcdefg hi", max_bytes=4) == ["abcdefg", " hi"]
    assert cut_at_spaces("ab cd", max_bytes=5) == ["ab cd"]
    assert cut_at_spaces("", max_bytes=5) == []


def test_cut_at_spaces_cuts_only_before_a_space_run_after_a_non_space():
    for text, limit in _random_texts(1, 300):
        pieces = cut_at_spaces(text, max_bytes=limit)
        assert "".join(pieces) == text
        for before, after in zip(pieces, pieces[1:]):
            assert after[0] in " \u2581" and before[-1] not in " \u2581", (before, after)
        # A piece over the limit has no boundary within the limit to cut at.
        for piece in pieces:
            if len(piece.encode()) > limit:
                assert cut_at_spaces(piece, max_bytes=limit) == [piece] or \
                    len(cut_at_spaces(piece, max_bytes=limit)[0].encode()) > limit


def test_boundary_rules_detect_spanning_pieces():
    assert boundary_rules(["▁the", "▁▁▁", "ing", ":\n", "7"]) == BoundaryRules(True, True, True)
    assert not boundary_rules(["a▁b"]).spaces
    assert not boundary_rules(["▁▁x▁"]).spaces
    assert not boundary_rules(["▁1"]).digits
    assert not boundary_rules(["a\x00"]).nul


@pytest.mark.parametrize("digits", [False, True])
@pytest.mark.parametrize("nul", [False, True])
@pytest.mark.parametrize("space_symbol", [False, True])
def test_words_concatenate_back_to_the_text(digits, nul, space_symbol):
    findall = word_pattern(digits=digits, nul=nul, space_symbol=space_symbol).findall
    rng = random.Random(1)
    for _ in range(200):
        text = "".join(rng.choice("ab  1\x00\t\n▁") for _ in range(rng.randrange(0, 50)))
        words = findall(text)
        assert "".join(words) == text
        assert all(words)


def test_words_cut_before_spaces_digits_and_nul():
    findall = word_pattern(digits=True, nul=True, space_symbol=False).findall
    assert findall("  if x:\n    y = 10\x00 ") == [
        "  if",
        " x:\n",
        "    y",
        " =",
        " ",
        "1",
        "0",
        "\x00",
        " ",
    ]
    meta = word_pattern(digits=True, nul=True, space_symbol=True).findall
    assert meta("a\u2581b c") == ["a", "\u2581b", " c"]
