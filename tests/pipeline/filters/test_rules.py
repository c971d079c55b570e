"""The rules on planted truth: real prose kept, each planted document removed naming its rule;
the flags' overrides; the order the families run in."""

import collections

import pytest

from common.errors import ConfigError
from datagen.filter_plants import PLANTS, clean_documents, plant
from pipeline.config import ReadConfig
from pipeline.filters import rules
from pipeline.filters.rules import RULES, active_rules, first_failure

EVERY_RULE = {rule.name: rule.threshold for rule in RULES.values()}
DOCUMENTS = 100  # ≥ 99% then allows one miss per rule


@pytest.fixture(scope="module")
def clean():
    return clean_documents(count=DOCUMENTS, seed=1)


def test_clean_prose_is_kept(clean):
    failures = collections.Counter(
        f.rule for f in (first_failure(text, EVERY_RULE) for text in clean) if f)
    assert sum(failures.values()) <= DOCUMENTS // 100, failures
    assert len(set(clean)) == DOCUMENTS and min(len(t.split()) for t in clean) >= 250


def test_every_document_rule_has_a_plant():
    document_rules = {r.name for r in RULES.values() if r.kind == "document"}
    # gopher_max_words needs a real text of 100,000 words without repetition (tested below);
    # the duplicate n-gram rules are checked against the reference's definition
    # (test_gopher.py), their plants not yet at 99% (datagen/filter_plants.py says why).
    assert document_rules - set(PLANTS) == {
        "gopher_max_words", *(f"gopher_dup_{n}gram" for n in range(5, 11))}


@pytest.mark.parametrize("rule", sorted(PLANTS))
def test_planted_documents_are_removed_naming_their_rule(clean, rule):
    named = collections.Counter()
    for text in clean:
        found = first_failure(plant(rule, text), EVERY_RULE)
        named[found.rule if found else None] += 1
    assert named[rule] >= 0.99 * DOCUMENTS, named.most_common(4)


def test_max_words_counts_words_not_punctuation():
    text = ("The cat sat with the dog, and that was all. " * 3).strip()
    active = {"gopher_max_words": 20}
    assert first_failure(text, active).value == 30  # 10 words a sentence; "," and "." not
    assert first_failure(text, {"gopher_max_words": 30}) is None


def test_a_rule_off_is_not_applied_and_an_override_moves_its_threshold(clean):
    short = plant("gopher_min_words", clean[0])
    assert first_failure(short, {"gopher_min_words": 50}).rule == "gopher_min_words"
    assert first_failure(short, {"gopher_min_words": 40}) is None
    assert first_failure(short, {}) is None


def test_thresholds_and_subset_overrides_resolve_per_subset():
    def resolve(subset, **options):
        return dict(active_rules(filters=("gopher", "c4"), profile_name="pile",
                                 thresholds=options.get("thresholds", ""),
                                 subsets=options.get("subsets", ""), subset=subset))

    assert "c4_curly_bracket" in resolve("Pile-CC") and resolve("Github") == {}
    assert resolve("Pile-CC", thresholds='{"gopher_min_words": 80}')["gopher_min_words"] == 80
    changed = resolve("Github", thresholds='{"gopher_min_words": 80}',
                      subsets='{"Github": {"gopher_min_words": true, "c4_min_sentences": 3},'
                              ' "Pile-CC": {"c4_curly_bracket": false}}')
    assert changed == {"gopher_min_words": 80, "c4_min_sentences": 3}
    assert "c4_curly_bracket" not in resolve(
        "Pile-CC", subsets='{"Pile-CC": {"c4_curly_bracket": false}}')
    # a family not asked for by --filters stays off whatever the overrides say
    assert "fineweb_list_ratio" not in resolve(
        "Pile-CC", subsets='{"Pile-CC": {"fineweb_list_ratio": true}}')


@pytest.mark.parametrize("options, message", [
    ({"filters": ("gopher", "c5")}, "unknown filter 'c5'"),
    ({"filter_thresholds": '{"gopher_min_word": 3}'}, "unknown rule 'gopher_min_word'"),
    ({"filter_thresholds": '{"c4_curly_bracket": 1}'}, "has no threshold"),
    ({"filter_thresholds": '{"gopher_min_words": "50"}'}, "must be a number"),
    ({"filter_thresholds": "[1]"}, "must be a JSON object"),
    ({"filter_subsets": '{"Github": ["c4"]}'}, "must map rule names"),
    ({"filter_profile": "web"}, "--filter_profile must be pile or all"),
])
def test_bad_options_are_refused_naming_the_flag(options, message):
    with pytest.raises(ConfigError, match=message):
        ReadConfig(**options)


def test_families_run_in_fineweb_s_order_repetition_first():
    # Breaks gopher_dup_line_frac (repetition) and gopher_min_words (quality): the first named.
    text = "\n".join(["A short line here."] * 10)
    assert first_failure(text, EVERY_RULE).rule == "gopher_dup_line_frac"
    assert rules.FAMILIES["gopher"] == (rules.GOPHER_REPETITION, rules.GOPHER_QUALITY)
