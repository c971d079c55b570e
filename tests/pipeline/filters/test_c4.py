"""C4's page rules, and its line rules as they decide what the sentence count sees."""

from pipeline.filters import c4

ALL = {"c4_max_word_length": 1000, "c4_terminal_punct": None, "c4_min_words_per_line": 3,
       "c4_lorem_ipsum": None, "c4_javascript": None, "c4_curly_bracket": None,
       "c4_policy": None, "c4_min_sentences": 5}
FIVE = "One two three. Four five six. Seven eight nine. Ten eleven twelve. Last one here."


def _rule(text, active=ALL):
    found = c4.check(text, active)
    return found and (found.rule, found.value)


def test_five_sentences_in_punctuated_lines_pass():
    assert _rule(FIVE) is None
    assert _rule(FIVE.replace(". ", ".\n")) is None  # one a line: the same five


def test_lines_without_terminal_punctuation_or_with_few_words_do_not_count():
    assert _rule(FIVE[:-1]) == ("c4_min_sentences", 0)  # the one line lacks its final "."
    assert _rule(FIVE + "\nOk.\nSee the notes\nRead our privacy policy today.") is None
    no_punct_rule = {k: v for k, v in ALL.items() if k != "c4_terminal_punct"}
    assert _rule(FIVE[:-1], no_punct_rule) is None


def test_page_rules_look_only_at_kept_lines():
    assert _rule(FIVE + "\nLorem ipsum dolor sit amet.") == ("c4_lorem_ipsum", 1)
    assert _rule(FIVE + "\nWe like {braces} a lot.") == ("c4_curly_bracket", 1)
    assert _rule(FIVE + "\nint main() {") is None  # no terminal punctuation: dropped first
    assert _rule(FIVE + "\nThe javascript {x} line.") is None  # dropped as javascript first


def test_citations_are_removed_before_the_punctuation_check():
    assert c4.CITATION.sub("", "It is so.[1]") == "It is so."
    assert c4.count_sentences("It is so. And more. e.g. this") == 2  # not at "e.g."
