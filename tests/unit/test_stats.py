import math

import pytest

from pickfs.stats import percentile_from_histogram, relative, summarize
from pickfs.stats.summary import drift, mean_confidence_interval, sanitized_mean, trend


def test_summary_of_known_values():
    s = summarize([1, 2, 3, 4, 5])
    assert s.n == 5 and s.mean == 3 and s.median == 3
    assert s.stdev == pytest.approx(1.5811388, rel=1e-6)
    assert s.cv == pytest.approx(1.5811388 / 3, rel=1e-6)
    # t(0.975, 4) = 2.776445; half width = t * sd / sqrt(5)
    half = 2.776445 * 1.5811388 / math.sqrt(5)
    assert s.ci_low == pytest.approx(3 - half, rel=1e-5)
    assert s.ci_high == pytest.approx(3 + half, rel=1e-5)
    assert (s.minimum, s.maximum) == (1, 5)


def test_sanitized_mean_drops_one_highest_and_one_lowest():
    assert sanitized_mean([10, 1, 2, 3, 100]) == pytest.approx(5.0)
    assert sanitized_mean([4, 6]) == 5.0  # too few to drop anything


def test_single_value_has_zero_width_interval():
    assert mean_confidence_interval([7.0]) == (7.0, 7.0)
    s = summarize([7.0])
    assert s.stdev == 0 and s.ci_low == s.ci_high == 7.0


def test_interval_narrows_with_more_samples():
    few = summarize([9, 11, 10, 12, 8])
    many = summarize([9, 11, 10, 12, 8] * 4)
    assert (many.ci_high - many.ci_low) < (few.ci_high - few.ci_low)


def test_empty_input_is_an_error():
    with pytest.raises(ValueError):
        summarize([])


def test_relative_to_baseline():
    assert relative(150, 100) == 150
    assert math.isnan(relative(1, 0))


@pytest.mark.parametrize("q,expected", [(0, 1.0), (50, 2.0), (90, 3.0), (99, 10.0), (100, 10.0)])
def test_percentile_from_histogram(q, expected):
    hist = {1.0: 40, 2.0: 40, 3.0: 18, 10.0: 2}
    assert percentile_from_histogram(hist, q) == expected


def test_percentile_rejects_bad_input():
    with pytest.raises(ValueError):
        percentile_from_histogram({}, 50)
    with pytest.raises(ValueError):
        percentile_from_histogram({1.0: 1}, 101)


def test_drift():
    assert drift([100, 90, 80]) == pytest.approx(-0.2)
    assert drift([5]) == 0.0


def test_trend_finds_a_steady_climb_but_not_scatter():
    tau, p = trend([100, 110, 120, 130, 140, 150])
    assert tau == pytest.approx(1.0) and p < 0.05
    # the default job's ext2 runs here: a low first run, then scatter; not a trend
    assert trend([9306, 15355, 12557, 15511, 15894])[1] > 0.05
    assert trend([1, 2, 3]) == (0.0, 1.0)  # too few runs to tell


def test_stopping_rule_on_synthetic_sequences():
    from pickfs.stats.stopping import relative_half_width, settled

    quiet = [1000, 1002, 998, 1001]
    assert settled(quiet, 0.02)
    assert not settled(quiet[:2], 0.02, min_runs=3)  # never before the minimum
    noisy = [1000, 1400, 800, 1300]
    assert not settled(noisy, 0.02) and relative_half_width(noisy) > 0.2
    assert relative_half_width([5.0]) == float("inf")
