"""FineWeb's rules on small texts: their order, the blank lines they skip, the equalities."""

from pipeline.filters import fineweb
from pipeline.filters.rules import RULES
from pipeline.filters.words import split_words

ALL = {name: rule.threshold for name, rule in RULES.items() if rule.family == "fineweb"}


def _rule(text):
    found = fineweb.check(text, split_words(text), ALL)
    return found and (found.rule, round(found.value, 3))


def test_prose_passes():
    line = "This line is long enough to count and it ends as a sentence does."
    assert _rule("\n".join(f"{line[:-1]} {i}." for i in range(5))) is None


def test_each_rule_in_its_order():
    long_line = "a line long enough not to be short at all here"
    assert _rule("\n".join([long_line] * 8 + [long_line + "."])) == ("fineweb_line_punct", 0.111)
    assert _rule("Short.\nTiny.\nA line long enough not to be short at all.") is None  # 2/3
    assert _rule("Short.\nTiny.\nWee.\nA line long enough not to be short at all.") == (
        "fineweb_short_lines", 0.75)
    same = "This sentence is here twice, a duplicate line."
    assert _rule(f"{same}\n{same}\nAnd a third line that differs from them.") == (
        "fineweb_char_dup", 0.348)
    spaced = "\n\n\n\n\n".join(f"Line {i} is long enough to not be short." for i in range(4))
    assert _rule(spaced) == ("fineweb_list_ratio", 0.375)  # 15 newlines, 40 words


def test_whitespace_only_text_fails_the_punctuation_rule():
    assert _rule("  \n ") == ("fineweb_line_punct", 0.0)
