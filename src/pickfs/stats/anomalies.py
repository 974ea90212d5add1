"""Outlier runs (pure): modified z-scores from the median absolute deviation."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

MODIFIED_Z = 3.5  # Iglewicz and Hoaglin's cut-off


def outliers(values: Sequence[float]) -> list[int]:
    """Indexes of values whose modified z-score exceeds 3.5 (none with fewer than 4 values)."""
    if len(values) < 4:
        return []
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    if mad == 0:
        return [i for i, v in enumerate(values) if v != med] if sum(v != med for v in values) == 1 else []
    return [i for i, v in enumerate(values) if 0.6745 * abs(v - med) / mad > MODIFIED_Z]
