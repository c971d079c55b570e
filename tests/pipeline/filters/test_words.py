"""Words as NLTK's Treebank tokenizer splits them (hand-checked against nltk 3.9)."""

from pipeline.filters.words import find_duplicates, is_symbol, split_words


def test_punctuation_contractions_quotes_and_brackets_split_as_treebank_does():
    text = ("We don't know... yet. John's 3.5 well-known, e.g. x#y \"quoted\" (a) --verbose "
            "-v /usr/lib cannot end.")
    assert split_words(text) == [
        "We", "do", "n't", "know", "...", "yet", ".", "John", "'s", "3.5", "well-known", ",",
        "e.g", ".", "x", "#", "y", "``", "quoted", "''", "(", "a", ")", "--", "verbose", "-v",
        "/usr/lib", "can", "not", "end", "."]


def test_a_period_splits_off_only_where_a_sentence_ends():
    assert split_words("Version 3.11 is out.Really") == ["Version", "3.11", "is", "out.Really"]


def test_symbols_and_duplicates():
    assert is_symbol("...") and is_symbol("``") and not is_symbol("-v")
    assert find_duplicates(["a", "bb", "a", "bb", "bb"]) == (3, 5)
