import numpy as np
import pytest

from pickfs.stats.compare import compare, compare_all, holm


def test_a_clear_shift_is_found():
    rng = np.random.default_rng(3)
    base = 10_000 * rng.lognormal(0, 0.05, 5)
    faster = 13_000 * rng.lognormal(0, 0.05, 5)
    c = compare(faster, base)
    assert c.p < 0.05 and 1.0 < c.ci_low < 1.3 < c.ci_high  # found, and the interval covers the true 1.3


def test_no_shift_is_not_called_a_difference_at_the_nominal_rate():
    rng = np.random.default_rng(11)
    trials = 4000
    false = sum(compare(9_000 * rng.lognormal(0, 0.25, 5), 9_000 * rng.lognormal(0, 0.25, 5)).p < 0.05
                for _ in range(trials))
    assert false / trials <= 0.05


def test_bimodal_noise_like_this_vms_disk_stays_under_nominal():
    rng = np.random.default_rng(5)

    def sample():
        return rng.choice([9_000, 15_000], size=5, p=[0.6, 0.4]) * rng.lognormal(0, 0.05, 5)

    trials = 4000
    false = sum(compare(sample(), sample()).p < 0.05 for _ in range(trials))
    assert false / trials <= 0.05


def test_too_few_values_cannot_be_compared():
    assert compare([1.0], [1.0, 2.0]) is None
    assert compare([0.0, 0.0], [1.0, 2.0]) is None


def test_identical_constant_groups():
    c = compare([5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    assert c.ratio == 1 and c.p == 1.0


def test_holm():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]) == []
    assert holm([0.5]) == [0.5]


def test_compare_all_corrects_across_configurations():
    rng = np.random.default_rng(1)
    groups = {"base": list(10_000 * rng.lognormal(0, 0.1, 5)),
              "same": list(10_000 * rng.lognormal(0, 0.1, 5)),
              "double": list(20_000 * rng.lognormal(0, 0.1, 5))}
    out = compare_all(groups, "base")
    assert set(out) == {"same", "double"}
    assert out["double"].significant and not out["same"].significant
    assert out["double"].p_adjusted >= out["double"].p
