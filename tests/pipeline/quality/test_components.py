import random

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.quality import components
from pipeline.quality.components import Components, ComponentsNotConverged


def test_large_star_links_larger_neighbours_to_the_least():
    assert components.large_star(5, [3, 7, 9]) == [(3, 7), (3, 9)]
    assert components.large_star(2, [3, 7]) == [(2, 3), (2, 7)]
    assert components.large_star(9, [3, 7]) == []


def test_small_star_links_the_node_and_its_smaller_neighbours_to_the_least():
    assert components.small_star(9, [3, 7]) == [(3, 7), (3, 9)]
    assert components.small_star(4, []) == []


def test_components_merge_chains_into_stars_around_their_least_node():
    rng = random.Random(0)
    ids = list(range(1000))
    rng.shuffle(ids)
    chain = [(ids[i], ids[i + 1]) for i in range(999)]
    other = [(2000, 2001), (2001, 2002)]
    found = components.components(chain + other)
    assert set(found) == set(ids) | {2000, 2001, 2002}
    assert {found[i] for i in ids} == {0} and {found[i] for i in (2000, 2001, 2002)} == {2000}


def test_rounds_needed_grow_slowly_and_the_default_covers_long_chains():
    sorted_chain = [(i, i + 1) for i in range(3999)]  # the worst order we found
    needed = components.rounds_needed(sorted_chain)
    assert 5 < needed <= components.DEFAULT_ROUNDS
    assert components.rounds_needed([(1, 2)]) == 0
    with pytest.raises(ComponentsNotConverged):
        components.rounds_needed(sorted_chain[:100], limit=2)


def test_a_sorted_path_longer_than_the_rounds_still_converges():
    path = [(i, i + 1) for i in range(5000)]
    assert components.rounds_needed(path) > components.DEFAULT_ROUNDS
    found = components.components(path)
    assert set(found.values()) == {0} and len(found) == 5001
    assert components.components(path[:100], rounds=2) == {i: 0 for i in range(101)}


def _node(i):
    return (i // 10, i % 10 + 1, "A", 0)  # (file, line, subset, tokens)


def test_the_beam_transform_gives_each_member_its_centre():
    rng = random.Random(1)
    ids = list(range(60))
    rng.shuffle(ids)
    edges = [(_node(ids[i]), _node(ids[i + 1])) for i in range(59)] + [(_node(100), _node(101))]
    expected = [(_node(0), _node(i)) for i in range(1, 60)] + [(_node(100), _node(101))]
    with BeamTestPipeline() as p:
        assert_that(p | beam.Create(edges) | Components(), equal_to(expected))


def test_the_beam_transform_merges_what_its_rounds_leave_tangled():
    # A sorted path needs more than one round: the residual finishes it in one cluster.
    edges = [(_node(i), _node(i + 1)) for i in range(40)] + [(_node(100), _node(101))]
    expected = [(_node(0), _node(i)) for i in range(1, 41)] + [(_node(100), _node(101))]
    for rounds in (0, 1, 2):
        with BeamTestPipeline() as p:
            assert_that(
                p | beam.Create(edges) | Components(rounds=rounds),
                equal_to(expected),
                label=f"rounds{rounds}",
            )


def test_a_sorted_path_of_more_rounds_than_unrolled_converges_in_beam():
    path = [(_node(i), _node(i + 1)) for i in range(5000)]
    assert components.rounds_needed(path) > 12
    with BeamTestPipeline() as p:
        assert_that(
            p | beam.Create(path) | Components(),
            equal_to([(_node(0), _node(i)) for i in range(1, 5001)]),
        )


def test_an_upper_node_with_two_lower_ends_is_not_converged():
    # (1, 3) and (2, 3): no node is both a lower and an upper end, but 3 has two centres,
    # so 1 and 2 are one component that is not merged yet.
    assert not components.converged({(1, 3), (2, 3)})
    assert components.rounds_needed([(1, 3), (2, 3)]) == 1
    assert components.components([(1, 3), (2, 3)], rounds=0) == {1: 1, 2: 1, 3: 1}


def test_the_beam_transform_merges_a_member_of_two_centres():
    edges = [(_node(1), _node(3)), (_node(2), _node(3)), (_node(2), _node(5))]
    with BeamTestPipeline() as p:
        assert_that(
            p | beam.Create(edges) | Components(rounds=0),
            equal_to([(_node(1), _node(i)) for i in (2, 3, 5)]),
        )
