"""Power-cut states from a recorded log, and what each lost (pure).

The model is a worst-case disk with a volatile write cache: at a power cut, every write before
the last completed flush is on the platter; writes after it may each have been kept or dropped,
in any order. A drive with power-loss protection does better than this. Everything written
before the workload started is taken as safely on disk.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pickfs.crash.log import FLUSH, Record

# How the writes after the last flush fare in a state, taken in turn over the cut points.
MODES = ("unflushed lost", "half the unflushed lost", "unflushed kept")


@dataclass(frozen=True)
class CrashState:
    index: int
    cut: int  # records [0, cut) reached the recorder before the power failed
    durable: int  # records [0, durable) are on stable storage (up to the last flush before the cut)
    kept: tuple[int, ...]  # unflushed changes in [durable, cut) that survived
    dropped: int  # unflushed changes that did not
    t_ns: int  # the latest moment of the power cut (before the next record arrived): later acks do not count
    mode: str

    def applied(self, start: int) -> list[int]:
        """Record indexes to apply on top of the state at `start`, in order."""
        return [*range(start, self.durable), *self.kept]


def window(records: Sequence[Record], t_start: int, t_end: int) -> tuple[int, int]:
    """[first, last) indexes of the records that arrived while the workload ran."""
    first = next((i for i, r in enumerate(records) if r.t_ns > t_start), len(records))
    last = next((i for i in range(len(records) - 1, -1, -1) if records[i].t_ns <= t_end), -1) + 1
    return first, max(first, last)


def cut_points(first: int, last: int, n: int) -> list[int]:
    """Up to n cut points spread evenly over the records of the window (a cut after record i is i + 1)."""
    span = last - first
    if span <= 0:
        return [first] if n > 0 else []
    return sorted({first + max(1, round(span * (k + 1) / n)) for k in range(n)})


def crash_moments(records: Sequence[Record], t_start: int, t_end: int, n: int) -> list[tuple[int, int]]:
    """n (cut, latest moment) pairs: spread over the window's records, then over its time if it has few.

    A window with no record at all (a database that never wrote while acknowledging commits)
    still gets n moments: the same image, with more and more commits acknowledged before the cut.
    """
    first, last = window(records, t_start, t_end)
    out: list[tuple[int, int]] = []
    for cut in cut_points(first, last, n):
        out.append((cut, min(records[cut].t_ns - 1, t_end) if cut < len(records) else t_end))
    times = [r.t_ns for r in records]
    k = 0
    while len(out) < n and k < n:
        k += 1
        moment = t_start + (t_end - t_start) * k // n
        cut = max(first, bisect.bisect_right(times, moment))
        if (cut, moment) not in out:
            out.append((cut, moment))
    return sorted(out, key=lambda cm: cm[1])[:n]


def generate(records: Sequence[Record], t_start: int, t_end: int, n: int, seed: int = 1) -> list[CrashState]:
    """n power-cut states over the workload's window, cycling through MODES."""
    first, _ = window(records, t_start, t_end)
    rng = random.Random(seed)
    states: list[CrashState] = []
    for k, (cut, t_ns) in enumerate(crash_moments(records, t_start, t_end, n)):
        durable = first
        for i in range(cut - 1, first - 1, -1):
            if records[i].kind == FLUSH:
                durable = i + 1
                break
        volatile = [i for i in range(durable, cut) if records[i].changes]
        mode = MODES[k % len(MODES)]
        if mode == "unflushed lost":
            kept: list[int] = []
        elif mode == "unflushed kept":
            kept = volatile
        else:
            kept = [i for i in volatile if rng.random() < 0.5]
        states.append(CrashState(len(states), cut, durable, tuple(kept), len(volatile) - len(kept), t_ns, mode))
    return states


@dataclass(frozen=True)
class Loss:
    lost: tuple[int, ...]  # acknowledged commits missing after recovery
    seconds: float  # work lost: from the oldest lost acknowledgement to the power cut


def losses(acks: Mapping[int, int], present: set[int], t_cut: int) -> Loss:
    """Commits acknowledged before the cut that recovery did not bring back."""
    lost = sorted(cid for cid, t in acks.items() if t < t_cut and cid not in present)
    oldest = min((acks[c] for c in lost), default=t_cut)
    return Loss(tuple(lost), (t_cut - oldest) / 1e9)


def parse_acks(text: str) -> dict[int, int]:
    """The client's acknowledgement log: 'commit-id monotonic-ns' per line; a torn last line is ignored."""
    out: dict[int, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            out[int(parts[0])] = int(parts[1])
    return out
