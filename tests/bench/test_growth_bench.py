"""The growth benchmark's arithmetic: growth against 1x and the marginal rate per MB."""

import pytest

from bench.growth_bench import Run, growth, slope


def _run(kind, k, *, text_mb, wall, cpu, peak_mb):
    return Run(
        kind=kind,
        k=k,
        text_mb=text_mb,
        wall=wall,
        cpu=cpu,
        peak_mb=peak_mb,
        prepass_s=0.0,
        main_s=0.0,
        shuffled_mb=0.0,
        prepass_shuffled_mb=0.0,
        largest_shuffles="",
        written=0,
        dropped=0,
        requests=0,
    )


def test_growth_is_each_kinds_rate_against_its_smallest_size():
    runs = [
        _run("distinct", 1, text_mb=2.0, wall=10.0, cpu=4.0, peak_mb=300.0),
        _run("distinct", 8, text_mb=16.0, wall=40.0, cpu=24.0, peak_mb=450.0),
        _run("chained", 4, text_mb=4.0, wall=8.0, cpu=4.0, peak_mb=200.0),
        _run("chained", 8, text_mb=8.0, wall=32.0, cpu=4.0, peak_mb=200.0),
    ]
    ratios = growth(runs)
    # distinct: 5 -> 2.5 s/MB, 2 -> 1.5 CPU-s/MB, 300 -> 450 MB; chained: 2 -> 4, 1 -> 0.5
    assert ratios[("distinct", 1)] == (1.0, 1.0, 1.0)
    assert ratios[("distinct", 8)] == pytest.approx((0.5, 0.75, 1.5))
    assert ratios[("chained", 8)] == pytest.approx((2.0, 0.5, 1.0))


def test_slope_is_the_marginal_cost_and_its_intercept_the_fixed_cost():
    # 9 CPU-s fixed plus 0.25 a MB, exactly
    assert slope([(3.0, 9.75), (12.0, 12.0), (48.0, 21.0)]) == pytest.approx((0.25, 9.0))
    assert slope([(5.0, 1.0), (5.0, 3.0)]) == (0.0, 2.0)  # one size: no slope
