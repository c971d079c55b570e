"""``--filter_profile=pile``: which rules apply to which Pile subset.

Web text gets every rule: the rules were made for it. The others get the rules that hold for
their kind of text: C4's ``{`` rule and terminal-punctuation lines would remove most of Github,
ArXiv and DM Mathematics, Gopher's stop words most of EuroParl's other languages, its
100,000-word cap whole books, and line rules every subtitle file. A subset the table does not
name (not the Pile's) is taken as web text. docs/filters.md has the table;
``--filter_subsets`` changes it per subset.
"""

from __future__ import annotations

import re

WEB, PROSE, BOOKS, MULTILINGUAL, DIALOGUE, CODE_MATH = (
    "web", "prose", "books", "multilingual", "dialogue", "code_math")
GROUPS = {
    WEB: ("Pile-CC", "OpenWebText2"),
    PROSE: ("Wikipedia (en)", "PubMed Central", "PubMed Abstracts", "NIH ExPorter",
            "PhilPapers", "FreeLaw", "USPTO Backgrounds", "HackerNews", "Enron Emails"),
    BOOKS: ("Books3", "BookCorpus2", "Gutenberg (PG-19)"),
    MULTILINGUAL: ("EuroParl",),
    DIALOGUE: ("OpenSubtitles", "YoutubeSubtitles", "Ubuntu IRC", "StackExchange"),
    CODE_MATH: ("Github", "ArXiv", "DM Mathematics"),
}
GROUP_OF = {subset: group for group, subsets in GROUPS.items() for subset in subsets}
# What each group keeps, in words (docs/filters.md's table).
KEEPS = {
    WEB: "every rule",
    PROSE: "Gopher quality and repetition, c4_lorem_ipsum",
    BOOKS: "as prose, without gopher_max_words (a book is longer)",
    MULTILINGUAL: "as prose, without gopher_stop_words (English stop words)",
    DIALOGUE: "Gopher's n-gram repetition rules (gopher_top_*, gopher_dup_{5..10}gram), "
              "c4_lorem_ipsum",
    CODE_MATH: "none",
}
_NGRAM_RULE = re.compile(r"gopher_(top|dup)_\d+gram")


def _prose(rule: str) -> bool:
    return rule.startswith("gopher_") or rule == "c4_lorem_ipsum"


_APPLIES = {
    WEB: lambda rule: True,
    PROSE: _prose,
    BOOKS: lambda rule: _prose(rule) and rule != "gopher_max_words",
    MULTILINGUAL: lambda rule: _prose(rule) and rule != "gopher_stop_words",
    DIALOGUE: lambda rule: bool(_NGRAM_RULE.fullmatch(rule)) or rule == "c4_lorem_ipsum",
    CODE_MATH: lambda rule: False,
}


def group(subset: str) -> str:
    """The profile's group of ``subset`` (web for a subset the Pile does not have)."""
    return GROUP_OF.get(subset, WEB)


def applies(rule: str, *, subset: str) -> bool:
    """Whether the pile profile applies ``rule`` to ``subset``.

    >>> applies("c4_curly_bracket", subset="Github"), applies("c4_curly_bracket", subset="Pile-CC")
    (False, True)
    """
    return _APPLIES[group(subset)](rule)
