"""The stopping rule (pure): has a cell's interval narrowed enough to stop repeating it?"""

from __future__ import annotations

from collections.abc import Sequence

from pickfs.stats.summary import mean_confidence_interval


def relative_half_width(values: Sequence[float], level: float = 0.95) -> float:
    """Half the width of the mean's interval, as a share of the mean (inf when undefined)."""
    if len(values) < 2:
        return float("inf")
    lo, hi = mean_confidence_interval(values, level)
    mean = (lo + hi) / 2
    return (hi - lo) / 2 / abs(mean) if mean else float("inf")


def settled(values: Sequence[float], target: float, min_runs: int = 3, level: float = 0.95) -> bool:
    return len(values) >= max(min_runs, 2) and relative_half_width(values, level) <= target
