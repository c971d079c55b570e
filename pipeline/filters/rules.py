"""The rule registry: every rule's name, family, default threshold and citation; the
``--filters`` families; thresholds overridden per rule and per subset; the first rule a
document fails.

``active_rules`` resolves, once per subset, which rules apply and with which thresholds: the
profile's table (``pipeline.filters.profile``), then ``--filter_thresholds`` (rule ->
threshold), then ``--filter_subsets`` (subset -> {rule: false | true | threshold}).
``first_failure`` runs them in the order of FineWeb's pipeline (Gopher repetition, Gopher
quality, C4, FineWeb), each family in its reference's order.
"""

from __future__ import annotations

import dataclasses
import functools
import json

from common.errors import ConfigError
from pipeline.filters import c4, fineweb, gopher, profile
from pipeline.filters.failure import Failure
from pipeline.filters.words import split_words

GOPHER_QUALITY, GOPHER_REPETITION, C4, FINEWEB = ("gopher_quality", "gopher_repetition", "c4",
                                                  "fineweb")
GOPHER_PAPER = "Rae et al. 2021, Table A1 / A.1.1"
C4_PAPER = "Raffel et al. 2020, Section 2.2"
FINEWEB_PAPER = "Penedo et al. 2024, Section 3.5"


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    family: str
    threshold: float | None  # the reference's default; None: the rule has none
    removes: str  # when it removes a document (or, kind "line", a line), in words
    kind: str = "document"  # "line": C4's line rules, which feed c4_min_sentences


def _rules() -> tuple[Rule, ...]:
    rep = [Rule("gopher_dup_para_frac", GOPHER_REPETITION, 0.3,
                "paragraphs equal to an earlier one / paragraphs > t"),
           Rule("gopher_dup_para_char_frac", GOPHER_REPETITION, 0.2,
                "characters in duplicate paragraphs / characters > t"),
           Rule("gopher_dup_line_frac", GOPHER_REPETITION, 0.3,
                "lines equal to an earlier one / lines > t"),
           Rule("gopher_dup_line_char_frac", GOPHER_REPETITION, 0.2,
                "characters in duplicate lines / characters > t")]
    rep += [Rule(f"gopher_top_{n}gram", GOPHER_REPETITION, t,
                 f"characters of the most frequent word {n}-gram x its count / characters > t")
            for n, t in zip(gopher.TOP_NGRAMS, (0.2, 0.18, 0.16))]
    rep += [Rule(f"gopher_dup_{n}gram", GOPHER_REPETITION, t,
                 f"characters in repeated word {n}-grams / characters > t")
            for n, t in zip(gopher.DUP_NGRAMS, (0.15, 0.14, 0.13, 0.12, 0.11, 0.10))]
    quality = [
        Rule("gopher_min_words", GOPHER_QUALITY, 50, "words (not punctuation) < t"),
        Rule("gopher_max_words", GOPHER_QUALITY, 100_000, "words (not punctuation) > t"),
        Rule("gopher_min_mean_word_length", GOPHER_QUALITY, 3, "mean word length < t"),
        Rule("gopher_max_mean_word_length", GOPHER_QUALITY, 10, "mean word length > t"),
        Rule("gopher_hash_ratio", GOPHER_QUALITY, 0.1, "'#' / words > t"),
        Rule("gopher_ellipsis_ratio", GOPHER_QUALITY, 0.1, "('...' + '…') / words > t"),
        Rule("gopher_bullet_lines", GOPHER_QUALITY, 0.9,
             "lines starting with '•' or '-' / lines > t"),
        Rule("gopher_ellipsis_lines", GOPHER_QUALITY, 0.3,
             "lines ending with '...' or '…' / lines > t"),
        Rule("gopher_alpha_words", GOPHER_QUALITY, 0.8,
             "words holding a letter / words < t"),
        Rule("gopher_stop_words", GOPHER_QUALITY, 2,
             "distinct stop words (the, be, to, of, and, that, have, with) < t"),
    ]
    c4_rules = [
        Rule("c4_max_word_length", C4, 1000, "a line with a word longer than t", "line"),
        Rule("c4_terminal_punct", C4, None,
             "a line not ending in . ? ! \" ' (or ending in ...)", "line"),
        Rule("c4_min_words_per_line", C4, 3, "a line of fewer than t words", "line"),
        Rule("c4_lorem_ipsum", C4, None, "a kept line says 'lorem ipsum'"),
        Rule("c4_javascript", C4, None, "a line mentioning 'javascript'", "line"),
        Rule("c4_curly_bracket", C4, None, "a kept line holds '{'"),
        Rule("c4_policy", C4, None, "a line with a cookie or terms-of-use phrase", "line"),
        Rule("c4_min_sentences", C4, 5, "sentences in the kept lines < t"),
    ]
    web = [
        Rule("fineweb_line_punct", FINEWEB, 0.12,
             "non-blank lines ending in terminal punctuation / lines < t"),
        Rule("fineweb_short_lines", FINEWEB, 0.67,
             f"lines of <= {fineweb.SHORT_LINE_CHARS} characters / lines > t"),
        Rule("fineweb_char_dup", FINEWEB, 0.01,
             "characters in duplicate lines / characters (newlines aside) > t"),
        Rule("fineweb_list_ratio", FINEWEB, 0.3, "newlines / words > t"),
    ]
    return (*rep, *quality, *c4_rules, *web)


RULES = {rule.name: rule for rule in _rules()}
FAMILIES = {"gopher": (GOPHER_REPETITION, GOPHER_QUALITY), "c4": (C4,), "fineweb": (FINEWEB,)}
CITATIONS = {GOPHER_QUALITY: GOPHER_PAPER, GOPHER_REPETITION: GOPHER_PAPER, C4: C4_PAPER,
             FINEWEB: FINEWEB_PAPER}
PROFILES = ("pile", "all")


def _json_object(text: str, flag: str) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--{flag} must be a JSON object: {err} in {text!r}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--{flag} must be a JSON object, got {text!r}")
    return value


def _known(rule: str, flag: str) -> None:
    if rule not in RULES:
        raise ConfigError(f"--{flag}: unknown rule {rule!r}; the rules are "
                          f"{', '.join(RULES)} (docs/filters.md)")


def _threshold(rule: str, value, flag: str) -> float:
    if RULES[rule].threshold is None:
        raise ConfigError(f"--{flag}: rule {rule} has no threshold (switch it with "
                          f"--filter_subsets: true or false), got {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"--{flag}: {rule}'s threshold must be a number >= 0, got {value!r}")
    return float(value)


def check_options(*, filters: tuple[str, ...], thresholds: str, subsets: str) -> None:
    """Raise ConfigError naming the flag and the bad value unless the options are valid."""
    for name in filters:
        if name not in FAMILIES:
            raise ConfigError(f"--filters: unknown filter {name!r}; give a comma list of "
                              f"{', '.join(FAMILIES)}")
    for rule, value in _json_object(thresholds, "filter_thresholds").items():
        _known(rule, "filter_thresholds")
        _threshold(rule, value, "filter_thresholds")
    for subset, rules in _json_object(subsets, "filter_subsets").items():
        if not isinstance(rules, dict):
            raise ConfigError(f"--filter_subsets: {subset!r} must map rule names to false, "
                              f"true or a threshold, got {rules!r}")
        for rule, value in rules.items():
            _known(rule, "filter_subsets")
            if not isinstance(value, bool):
                _threshold(rule, value, "filter_subsets")


@functools.lru_cache(maxsize=1024)
def active_rules(*, filters: tuple[str, ...], profile_name: str, thresholds: str, subsets: str,
                 subset: str) -> tuple[tuple[str, float | None], ...]:
    """((rule, threshold), ...) of the rules that apply to ``subset``, in registry order.

    >>> dict(active_rules(filters=("c4",), profile_name="pile", thresholds="", subsets="",
    ...                   subset="Github"))
    {}
    """
    families = {family for name in filters for family in FAMILIES[name]}
    chosen = {rule.name: rule.threshold for rule in RULES.values() if rule.family in families
              and (profile_name == "all" or profile.applies(rule.name, subset=subset))}
    for rule, value in _json_object(thresholds, "filter_thresholds").items():
        if rule in chosen:
            chosen[rule] = float(value)
    for rule, value in _json_object(subsets, "filter_subsets").get(subset, {}).items():
        if RULES[rule].family not in families:
            continue  # a family not asked for by --filters
        if value is False:
            chosen.pop(rule, None)
        elif value is True:
            chosen.setdefault(rule, _global(rule, thresholds))
        else:
            chosen[rule] = float(value)
    return tuple((name, chosen[name]) for name in RULES if name in chosen)


def _global(rule: str, thresholds: str) -> float | None:
    value = _json_object(thresholds, "filter_thresholds").get(rule)
    return RULES[rule].threshold if value is None else float(value)


def first_failure(text: str, active: dict) -> Failure | None:
    """The first rule of ``active`` (rule -> threshold) that ``text`` fails, or None."""
    families = {RULES[rule].family for rule in active}
    if not families:
        return None
    words = split_words(text) if families - {C4} else []
    return ((GOPHER_REPETITION in families and gopher.repetition(text, words, active))
            or (GOPHER_QUALITY in families and gopher.quality(text, words, active))
            or (C4 in families and c4.check(text, active))
            or (FINEWEB in families and fineweb.check(text, words, active))
            or None)
