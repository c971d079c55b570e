"""mixture.py: the docstring's worked example, the repeat rule, the pile-v1 table, budgets."""

import collections

import pytest

from common.errors import ConfigError
from pipeline.config import mixture_weights
from pipeline.quality import mixture


def test_worked_example():
    assert [mixture.repeats(2.5, u) for u in (0.1, 0.7, 0.4, 0.9)] == [3, 2, 3, 2]


@pytest.mark.parametrize("weight, u, count", [(0.0, 0.0, 0), (0.25, 0.2, 1), (0.25, 0.25, 0),
                                              (1.0, 0.99, 1), (3.0, 0.0, 3), (1.5, 0.5, 1)])
def test_repeats_is_floor_plus_a_seeded_fraction(weight, u, count):
    assert mixture.repeats(weight, u) == count


def test_repeat_counts_are_deterministic_and_average_to_the_weight():
    weights = {"A": 2.25, "B": 0.5}
    counts = [mixture.repeat_count(weights, subset="A", seed=0, file_index=0, line=n)
              for n in range(4000)]
    assert counts == [mixture.repeat_count(weights, subset="A", seed=0, file_index=0, line=n)
                      for n in range(4000)]
    assert set(counts) == {2, 3} and abs(sum(counts) / 4000 - 2.25) < 0.03
    other = [mixture.repeat_count(weights, subset="A", seed=1, file_index=0, line=n)
             for n in range(4000)]
    assert other != counts  # the seed decides which documents get the extra copy
    assert mixture.repeat_count(weights, subset="C", seed=0, file_index=0, line=1) == 1
    halves = collections.Counter(mixture.repeat_count(weights, subset="B", seed=0, file_index=3,
                                                      line=n) for n in range(4000))
    assert set(halves) == {0, 1} and abs(halves[1] / 4000 - 0.5) < 0.03


def test_pile_v1_is_the_papers_table_1():
    table = mixture_weights.parse_weights("pile-v1")
    assert len(table) == 22
    assert table["Wikipedia (en)"] == 3.0 and table["Gutenberg (PG-19)"] == 2.5
    assert table["Books3"] == table["FreeLaw"] == table["OpenSubtitles"] == 1.5
    assert table["BookCorpus2"] == 1.5 and table["Pile-CC"] == table["Github"] == 1.0
    assert sorted(name for name, w in table.items() if w == 2.0) == sorted([
        "PubMed Central", "OpenWebText2", "ArXiv", "StackExchange", "USPTO Backgrounds",
        "PubMed Abstracts", "DM Mathematics", "Ubuntu IRC", "EuroParl", "HackerNews",
        "YoutubeSubtitles", "PhilPapers", "NIH ExPorter", "Enron Emails"])


@pytest.mark.parametrize("value, message", [
    ("{", "--subset_weights is not valid JSON"),
    ("[1]", "must be a JSON object"),
    ('{"A": -1}', "finite number >= 0"),
    ('{"A": "2"}', "finite number >= 0"),
    ('{"A": 5000}', "more than 1000"),
])
def test_bad_weights_name_the_flag(value, message):
    with pytest.raises(ConfigError, match=message):
        mixture_weights.parse_weights(value)


def test_budgets_give_weights_and_refuse_unknown_subsets():
    assert mixture_weights.parse_budgets('{"Github": 2e9}') == {"Github": 2_000_000_000}
    assert mixture.weights_from_budgets({"A": 50}, {"A": 200, "B": 10}) == {"A": 0.25}
    with pytest.raises(ConfigError, match=r"--subset_tokens names \['C'\].*its subsets: A, B"):
        mixture.weights_from_budgets({"C": 5}, {"A": 200, "B": 10})


def test_mixture_table():
    table = mixture.mixture_table(
        weights={"A": 2.0}, budgets={},
        before={"A": {"documents": 2, "tokens": 10}, "B": {"documents": 1, "tokens": 30}},
        after={"A": {"documents": 4, "tokens": 20}, "B": {"documents": 1, "tokens": 30}})
    assert table["A"] == {"weight": 2.0, "documents_before": 2, "tokens_before": 10,
                          "documents_after": 4, "tokens_after": 20, "token_share": 0.4}
    assert table["B"]["weight"] == 1.0 and table["B"]["token_share"] == 0.6
