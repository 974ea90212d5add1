"""The paired estimator and the round scheduler on synthetic series whose level drifts."""

import math
import random
from dataclasses import replace

import pytest

from pickfs.engine.schedule import RoundBudget, auto_blocks, round_budget, round_order, run_seed
from pickfs.model import Method, method_of
from pickfs.stats.compare import compare
from pickfs.stats.paired import (
    Obs,
    paired_compare,
    paired_compare_all,
    paired_diffs,
    primary_value,
    resolution,
    settled,
    slice_rate,
    split_variance,
)


def weather(t: float) -> float:
    """A disk whose speed moves 3x in regimes of tens of seconds (log scale)."""
    return math.log(3000) + 0.55 * math.sin(t / 9.0) + 0.35 * math.sin(t / 23.0 + 1.0)


def side_by_side(effects: dict[str, float], rounds: int = 12, blocks: int = 3, noise: float = 0.08,
                 block_sd: float = 0.0, seed: int = 1) -> dict[str, list[Obs]]:
    """Slices of 1 s taking turns as the engine runs them: every configuration built `blocks`
    times, all standing at once, each round visiting every one of them in a fresh random order."""
    rng = random.Random(seed)
    out: dict[str, list[Obs]] = {name: [] for name in effects}
    mkfs = {(name, b): rng.gauss(0, block_sd) for name in effects for b in range(blocks)}
    members = [(name, b) for b in range(blocks) for name in effects]
    t = 40.0 * blocks  # the blocks' setup
    for r in range(rounds):
        for name, b in round_order(members, seed, 0, r):
            t += 1.1
            level = weather(t) + math.log(effects[name]) + mkfs[name, b] + rng.gauss(0, noise)
            out[name].append(Obs(b, t, math.exp(level), r))
    return out


def test_a_real_difference_is_found_despite_the_drift():
    series = side_by_side({"ext4": 1.0, "nobarrier": 1.8, "btrfs": 0.35, "ext4-again": 1.0})
    comps = paired_compare_all(series, "ext4")
    assert comps["nobarrier"].significant and 1.65 < comps["nobarrier"].ratio < 1.95
    assert comps["btrfs"].significant and 0.31 < comps["btrfs"].ratio < 0.39
    assert comps["nobarrier"].ci_low < 1.8 < comps["nobarrier"].ci_high
    assert not comps["ext4-again"].significant
    assert comps["ext4-again"].ci_low < 1 < comps["ext4-again"].ci_high


def test_pairing_in_time_narrows_the_interval_over_the_same_values_unpaired():
    """What pairing buys: the weather blurs a 1.2x difference between values taken unpaired."""
    series = side_by_side({"a": 1.0, "b": 1.2}, rounds=6, blocks=6)
    unpaired = compare([o.value for o in series["b"]], [o.value for o in series["a"]])
    paired = paired_compare(series["b"], series["a"])
    assert unpaired is not None and paired is not None
    assert paired.p < 0.01
    assert paired.half_width < (unpaired.ci_high / unpaired.ratio - 1) / 2


def test_no_difference_raises_few_false_alarms():
    alarms = 0
    for seed in range(200):
        series = side_by_side({"a": 1.0, "b": 1.0}, rounds=6, noise=0.1, block_sd=0.0, seed=seed)
        c = paired_compare(series["b"], series["a"])
        alarms += c.p < 0.05
    assert alarms <= 16  # 5% of 200 is 10; allow for chance


def test_a_mkfs_to_mkfs_difference_widens_the_interval_and_is_reported():
    calm = paired_compare(*[side_by_side({"a": 1.0, "b": 1.0}, block_sd=0.0, blocks=4, seed=3)[k] for k in "ba"])
    lumpy = paired_compare(*[side_by_side({"a": 1.0, "b": 1.0}, block_sd=0.25, blocks=4, seed=3)[k] for k in "ba"])
    assert lumpy.block_share > 0.3 and calm.block_share < 0.1
    assert lumpy.half_width > 2 * calm.half_width


def test_interpolation_pairs_each_slice_with_the_baseline_at_its_moment():
    # the baseline's block 0 sits at log level 2, its block 1 at 4 (level 3 over both); the weather
    # rises by 2 from t=0 to t=10
    base = [Obs(0, 0.0, math.e ** 1), Obs(0, 10.0, math.e ** 3), Obs(1, 2.0, math.e ** 3.4), Obs(1, 8.0, math.e ** 4.6)]
    x = [Obs(0, 5.0, math.e ** 3.5), Obs(1, 5.0, math.e ** 3.5), Obs(0, 7.5, math.e ** 4.0)]
    d = paired_diffs(x, base)
    # weather at t=5 from both blocks' centred slices (-1 at 0, -0.6 at 2, +0.6 at 8, +1 at 10) is 0;
    # at 7.5 it is 0.5
    assert d.by_block == {0: [pytest.approx(0.5), pytest.approx(0.5)], 1: [pytest.approx(0.5)]}
    # the baseline's two blocks differ by 2 on the log scale: the level's variance is their spread / 2
    assert d.base_var == pytest.approx(2.0 / 2) and d.base_df == 1


def test_a_stalled_slice_is_counted_not_hidden():
    base = [Obs(0, float(t), 100.0, t) for t in range(6)]
    x = [Obs(0, t + 0.5, 0.0 if t == 2 else 110.0 + 3 * (t % 3), t) for t in range(6)]
    assert paired_diffs(x, base).dropped == 1
    c = paired_compare(x, base)
    assert c is not None and c.stalled == 1 and c.n == 5


def test_too_few_slices_or_no_spread_give_no_estimate():
    assert split_variance(paired_diffs([Obs(0, 1, 5.0)], [Obs(0, 0, 5.0)])) is None
    assert paired_compare([Obs(0, 1, 5.0)], [Obs(0, 0, 5.0), Obs(0, 2, 5.0)]) is None
    # identical slices: no spread, so no interval (never a zero-width "significant" one)
    same = [Obs(0, float(t), 5.0, t) for t in range(4)]
    assert paired_compare([Obs(0, t + 0.5, 6.0, t) for t in range(4)], same) is None


def test_two_way_table_counts_a_moment_shared_by_all_blocks():
    """A round whose baseline weather was misread shifts every block's slice in that round alike:
    the two-way model sees it as a round effect and widens the interval; no mkfs spread is invented."""
    rng = random.Random(5)
    x, base = [], []
    for r in range(8):
        shift = rng.gauss(0, 0.2)  # the same for every block in round r
        for b in range(4):
            t = r * 10.0 + b
            base.append(Obs(b, t, 100.0, r))
            x.append(Obs(b, t + 0.5, 100.0 * math.exp(0.1 + shift + rng.gauss(0, 0.02)), r))
    split = split_variance(paired_diffs(x, base))
    assert split.blocks == 4 and split.n == 32
    assert split.round_share > 0.8 and split.block_share < 0.1
    assert 6 <= split.df <= 8  # about the rounds' 7 degrees of freedom


def test_the_stopping_rule_and_the_resolution():
    series = side_by_side({"ext4": 1.0, "xfs": 1.1, "btrfs": 0.4}, rounds=20)
    comps = paired_compare_all(series, "ext4")
    widest = max(c.half_width for c in comps.values())
    assert settled(comps, 2, widest + 0.001) and not settled(comps, 2, widest - 0.001)
    assert not settled(comps, 3, 1.0)  # a comparison is missing (a failed configuration counts as unsettled)
    med, lo, hi = resolution(comps)
    assert lo <= med <= hi == widest


def test_a_slice_rate_includes_its_syncfs():
    assert slice_rate(1000.0, 1.0, 0.25) == pytest.approx(800.0)
    assert primary_value({"tps": 1000.0, "slice_s": 1.0, "syncfs_s": 0.25}, "tps") == pytest.approx(800.0)
    assert primary_value({"tps": 1000.0}, "tps") == 1000.0  # a whole run: as measured
    assert primary_value({}, "tps") is None


def test_round_order_is_a_fresh_permutation_each_round_and_reproducible():
    items = list(range(12))
    orders = [round_order(items, 7, 0, r) for r in range(10)]
    assert all(sorted(o) == items for o in orders)
    assert len({tuple(o) for o in orders}) == 10
    assert round_order(items, 7, 0, 3) == orders[3]
    assert round_order(items, 8, 0, 3) != orders[3]
    assert run_seed("20261122-1") == run_seed("20261122-1") != run_seed("20261122-2")


def test_round_budget():
    b = RoundBudget(min_rounds=5, budget_s=300, target=0.05, max_rounds=100)
    # never fewer than the minimum, even past the deadline
    assert b.another_round(4, settled=True, now=2000, deadline=1100, round_s=15)
    assert not b.another_round(5, settled=True, now=1000, deadline=1100, round_s=15)
    assert b.another_round(5, settled=False, now=1000, deadline=1100, round_s=15)
    assert not b.another_round(5, settled=False, now=1090, deadline=1100, round_s=15)
    assert not replace(b, max_rounds=9).another_round(9, settled=False, now=1000, deadline=1100, round_s=15)
    # and why they stop
    assert b.stop(5, settled=True, now=1000, deadline=1100, round_s=15) == "settled"
    assert b.stop(5, settled=False, now=1090, deadline=1100, round_s=15) == "budget"
    assert replace(b, max_rounds=9).stop(9, settled=False, now=1000, deadline=1100, round_s=15) == "rounds"
    assert replace(b, fixed=True).stop(5, settled=False, now=1000, deadline=1100, round_s=15) == "rounds"


def test_round_budget_from_the_method():
    default = round_budget(Method())
    assert (default.min_rounds, default.budget_s, default.target, default.fixed) == (3, 540.0, 0.05, False)
    fixed = round_budget(method_of(rounds=2, blocks=2))
    assert fixed.fixed and fixed.min_rounds == 2
    assert not fixed.another_round(2, settled=False, now=0, deadline=1e9, round_s=1)
    # a resumed run with one block of three left gets a third of the budget
    assert round_budget(method_of(max_seconds=300.0, rounds=4), 1 / 3).budget_s == pytest.approx(100.0)
    assert not round_budget(method_of(rounds=4, target_ci=0.02)).fixed
    assert round_budget(method_of(target_ci=0.02, max_runs=7)).max_rounds == 7
    assert round_budget(method_of(max_runs=7)).max_rounds > 1000  # without a target interval the budget ends them


def test_automatic_blocks_fit_a_fifth_of_the_budget():
    assert auto_blocks(setup_s=28, budget_s=540) == 3  # the default job: 12 SQLite configurations
    assert auto_blocks(setup_s=60, budget_s=540) == 2  # four PostgreSQL servers with data to load
    assert auto_blocks(setup_s=400, budget_s=540) == 2  # never fewer than two: mkfs-to-mkfs spread needs two
    assert auto_blocks(setup_s=10, budget_s=540) == 6
