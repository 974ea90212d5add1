"""The recommendation at a fixed rate: the lowest p99 from the scheduled start by the race's decision, or the
highest capacity within a target; never a configuration with a setting that can lose data."""

import random

from pickfs.analysis.latency import CapacityRow, RateRow, RateView, by_capacity, by_percentile
from pickfs.report.latency import latency_sentences
from pickfs.stats.capacity import Capacity, LatencyTarget
from pickfs.stats.latency import Slice, summarize_rate


def slices(p99_us: int, n: int = 8, seed: int = 1) -> list[Slice]:
    """n slices of 500 transactions each: most at 500 us, the slowest 2% near p99_us (with some spread)."""
    rng = random.Random(seed)
    out = []
    for r in range(n):
        hist: dict[int, int] = {500: 490}
        for _ in range(10):
            key = int(p99_us * rng.uniform(0.98, 1.02))
            hist[key] = hist.get(key, 0) + 1
        out.append(Slice(0, r, hist, 500, 0, 0, 400.0))
    return out


def view(by: dict[str, list[Slice]], baseline: str) -> RateView:
    rows = tuple(RateRow(n, summarize_rate(s), None) for n, s in by.items())  # type: ignore[arg-type]
    return RateView("w", baseline, rows)


def test_the_lowest_p99_is_recommended_even_over_a_preferred_one():
    by = {"ext4": slices(20_000), "xfs": slices(2_000, seed=2)}
    c = by_percentile(view(by, "ext4"), by, ["ext4", "xfs"], [], "data written", 0.05)
    assert c.settled and c.answer == "xfs"
    assert latency_sentences(c)[0].startswith("w at 400/s: use xfs (p99 2.0")
    assert "ext4 p99 19.99 ms, ×9.98 [" in latency_sentences(c)[0]  # the paired ratio and its interval


def test_p99s_within_the_margin_go_to_the_preferred_one_or_stay_undecided():
    by = {"ext4": slices(5_000, seed=3), "xfs": slices(5_000, seed=4)}
    c = by_percentile(view(by, "ext4"), by, ["ext4", "xfs"], [], "data written", 0.05)
    if c.settled:
        assert c.answer == "ext4"  # within the margin, preference wins, as in the race
    else:
        assert c.answer is None and "could not decide between ext4 and xfs" in latency_sentences(c)[0]


def test_too_few_slices_to_tell_says_so():
    by = {"ext4": slices(5_000, n=3, seed=3)[:2], "xfs": slices(4_000, n=2, seed=4)}
    c = by_percentile(view(by, "ext4"), by, ["ext4", "xfs"], [], "data written", 0.05)
    assert not c.settled and c.answer is None


def test_an_unsafe_configuration_is_never_recommended():
    by = {"ext4": slices(20_000), "nobarrier": slices(1_000, seed=2)}
    c = by_percentile(view(by, "ext4"), by, ["ext4"], ["nobarrier"], "acknowledged commits", 0.05)
    assert c.answer == "ext4" and "nobarrier" not in latency_sentences(c)[0].split(":")[1].split(";")[0]
    none = by_percentile(view(by, "ext4"), by, [], ["ext4", "nobarrier"], "acknowledged commits", 0.05)
    assert none.answer is None and "every configuration measured has a setting" in latency_sentences(none)[0]


def cap(config: str, rate: float, low: float, high: float | None) -> CapacityRow:
    return CapacityRow(config, (), Capacity(rate, low, high, high, 4))


def test_the_highest_capacity_within_the_target_is_recommended():
    target = LatencyTarget(99.0, 0.01)
    rows = [cap("ext4", 800, 700, 1000), cap("xfs", 2000, 1800, 2400), cap("nobarrier", 9000, 8000, None)]
    c = by_capacity("w", target, rows, ["ext4", "xfs"], "acknowledged commits")
    assert c.settled and c.answer == "xfs"
    assert latency_sentences(c)[0].startswith("w within p99 <= 10 ms from the scheduled start: use xfs: it holds 2,000/s")


def test_capacities_that_overlap_cannot_be_told_apart():
    target = LatencyTarget(99.0, 0.01)
    rows = [cap("ext4", 1900, 1600, 2300), cap("xfs", 2000, 1800, 2400)]
    c = by_capacity("w", target, rows, ["ext4", "xfs"], "data written")
    assert not c.settled and c.answer is None and "could not decide between xfs and ext4" in latency_sentences(c)[0]
