"""The pile profile: web text gets every rule, code and math none, the others what suits them."""

from pipeline.filters import profile
from pipeline.filters.rules import RULES


def _rules(subset):
    return {name for name in RULES if profile.applies(name, subset=subset)}


def test_web_text_and_unknown_subsets_get_every_rule():
    assert _rules("Pile-CC") == _rules("OpenWebText2") == _rules("my-own-crawl") == set(RULES)


def test_code_and_math_are_not_gutted_by_c4_or_gopher():
    for subset in ("Github", "ArXiv", "DM Mathematics"):
        assert _rules(subset) == set()


def test_books_keep_their_length_and_europarl_its_languages():
    assert "gopher_max_words" not in _rules("Books3") and "gopher_min_words" in _rules("Books3")
    assert "gopher_stop_words" not in _rules("EuroParl")
    assert "gopher_stop_words" in _rules("Wikipedia (en)")


def test_dialogue_keeps_only_degenerate_repetition_and_lorem_ipsum():
    assert _rules("Ubuntu IRC") == {
        "gopher_top_2gram", "gopher_top_3gram", "gopher_top_4gram", "c4_lorem_ipsum",
        *(f"gopher_dup_{n}gram" for n in range(5, 11))}


def test_every_pile_subset_is_in_exactly_one_group():
    named = [s for subsets in profile.GROUPS.values() for s in subsets]
    assert len(named) == len(set(named)) == 22 and set(profile.KEEPS) == set(profile.GROUPS)
