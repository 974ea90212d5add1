"""Outlier runs (pure): modified z-scores from the median absolute deviation."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

MODIFIED_Z = 3.5  # Iglewicz and Hoaglin's cut-off


def outliers(values: Sequence[float]) -> list[int]:
    """Indexes of values whose modified z-score exceeds 3.5.

    None with fewer than 4 values, and none when more than one run in five would be flagged:
    then the runs are spread (say, a disk that switches between two speeds), not disturbed.
    """
    if len(values) < 4:
        return []
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    if mad == 0:
        found = [i for i, v in enumerate(values) if v != med]
    else:
        found = [i for i, v in enumerate(values) if 0.6745 * abs(v - med) / mad > MODIFIED_Z]
    return found if len(found) <= max(1, len(values) // 5) else []
