"""Percentiles from the schedule side by side: merged histograms, paired bootstrap ratios (stats/latency.py)."""

from __future__ import annotations

import json
import random

import pytest

from pickfs.stats.latency import (
    Slice,
    fixed_rate_block,
    merge,
    paired_units,
    percentile_interval,
    percentile_ratio,
    percentile_us,
    summarize_rate,
)


def hist(values_us: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for v in values_us:
        out[v] = out.get(v, 0) + 1
    return out


def slices(seed: int, rounds: int, base_us: int, stall_us: int = 0, stall_rounds: int = 0,
           stall_share: float = 0.05) -> list[Slice]:
    """One slice per round: ~400 transactions around base_us; in the first stall_rounds rounds a share
    of them waited stall_us more."""
    rng = random.Random(seed)
    out = []
    for r in range(rounds):
        values = [int(rng.gauss(base_us, base_us / 10)) for _ in range(400)]
        if r < stall_rounds:
            values = [v + stall_us if rng.random() < stall_share else v for v in values]
        out.append(Slice(0, r, hist(values), 400, 0, 0, 200.0))
    return out


def test_percentiles_of_merged_histograms_not_averaged():
    a, b = hist([1] * 99 + [1000]), hist([1] * 100)
    assert percentile_us(merge([a, b]), 99.9) == 1000
    assert percentile_us(merge([a, b]), 99) == 1
    assert percentile_us({}, 50) is None


def test_summary_counts_shares_and_cpu_bound_slices():
    s = [Slice(0, 0, hist([100, 200]), 4, 1, 2, 50.0, cpu_bound=True), Slice(0, 1, hist([300]), 4, 0, 0, 50.0)]
    r = summarize_rate(s)
    assert r is not None
    assert (r.due, r.late_share, r.missed_share, r.cpu_bound_slices) == (8, 1 / 8, 2 / 8, 1)
    assert r.percentiles_s[50.0] == pytest.approx(200e-6)


def test_a_stalling_configuration_has_a_p99_ratio_whose_interval_excludes_one():
    base = slices(1, 12, 1000)
    stalling = slices(2, 12, 1000, stall_us=100_000, stall_rounds=12)
    r = percentile_ratio(stalling, base, 99.0)
    assert r is not None and r.low is not None and r.high is not None
    assert r.ratio > 10 and r.low > 1


def test_two_alike_configurations_have_an_interval_around_one():
    r = percentile_ratio(slices(3, 12, 1000), slices(4, 12, 1000), 99.0)
    assert r is not None and r.low is not None and r.high is not None
    assert r.low < 1 < r.high and r.high / r.low < 1.3


def test_a_stall_in_few_rounds_widens_the_interval():
    steady = percentile_ratio(slices(5, 12, 1000, 100_000, 12), slices(6, 12, 1000), 99.0)
    rare = percentile_ratio(slices(5, 12, 1000, 100_000, 2, stall_share=0.1), slices(6, 12, 1000), 99.0)
    assert steady and rare and steady.low and steady.high and rare.low and rare.high
    assert rare.high / rare.low > steady.high / steady.low


def test_pairs_are_the_rounds_both_ran_and_too_few_give_no_interval():
    a = slices(7, 5, 1000)
    b = [s for s in slices(8, 5, 1000) if s.round != 2]
    assert [p[0].round for p in paired_units(a, b)] == [0, 1, 3, 4]
    r = percentile_ratio(a[:2], b[:2], 99.0)
    assert r is not None and r.low is None and r.units == 2


def test_percentile_interval_brackets_the_point():
    point, low, high = percentile_interval(slices(9, 10, 2000), 99.0)
    assert low <= point <= high


def test_fixed_rate_block_from_raw_output():
    assert fixed_rate_block(json.dumps({"fixed_rate": {"due": 3}})) == {"due": 3}
    assert fixed_rate_block("not json") is None
    assert fixed_rate_block(json.dumps({"transactions": 3})) is None


def test_late_share_unknown_when_a_tool_reports_no_lag():
    from pickfs.stats.latency import slice_from

    known = slice_from(0, 0, {"due": 10, "late": 2, "skipped": 0, "unfinished": 1, "offered": 5, "latency_us": {}})
    unknown = slice_from(0, 1, {"due": 10, "skipped": 0, "unfinished": 0, "offered": 5, "latency_us": {"10": 1}})
    assert summarize_rate([known]).late_share == 0.2
    assert summarize_rate([known, unknown]).late_share is None
    assert summarize_rate([known, unknown]).missed_share == 0.05
