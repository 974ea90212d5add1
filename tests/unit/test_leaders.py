"""The leaders: a configuration is left out only when its own comparisons show one faster (Holm over k - 1)."""

from types import SimpleNamespace

import pytest

from pickfs.analysis import whole
from pickfs.stats.compare import Comparison


def rows(*names):
    return [SimpleNamespace(cell=SimpleNamespace(config=SimpleNamespace(name=n))) for n in names]


def pairs_from(speed: dict[str, float], p: dict[frozenset, float]):
    """A stand-in for views.pair: ratio of the speeds, and a stated p for each pair (0.5 if not stated)."""
    def pair(view, a, b):
        r = speed[a] / speed[b]
        return Comparison(r, r * 0.9, r * 1.1, p.get(frozenset((a, b)), 0.5))
    return pair


@pytest.fixture
def six(monkeypatch):
    speed = {"lead": 1.10, "b": 1.05, "c": 1.0, "d": 1.0, "e": 0.98, "slow": 0.60}
    # slow against the leader: p = 0.006; significant among its own 5 comparisons (0.006 x 5 = 0.03),
    # not over all 15 pairs (0.006 x 15 = 0.09); everything else indistinct
    p = {frozenset(("lead", "slow")): 0.006}
    monkeypatch.setattr(whole, "pair", pairs_from(speed, p))
    return list(speed)


def test_a_configuration_beaten_only_through_its_own_comparisons_is_left_out(six):
    assert whole._beaten(None, rows(*six), True) == {"slow"}


def test_the_faster_side_of_a_pair_is_never_left_out_by_it(six, monkeypatch):
    beaten = whole._beaten(None, rows(*six), False)  # a time metric: lower is better, so "slow" is fastest
    assert "slow" not in beaten and beaten == {"lead"}


def test_a_pair_whose_two_directions_disagree_counts_as_indistinct(monkeypatch):
    def pair(view, a, b):  # a against b says a is faster both ways: the directions disagree
        return Comparison(1.5, 1.4, 1.6, 0.0001)
    monkeypatch.setattr(whole, "pair", pair)
    assert whole._beaten(None, rows("x", "y"), True) == set()
