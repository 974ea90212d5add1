"""Which trial comes next (pure): interleaved repetitions, and the stopping rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pickfs.model import Cell, Method
from pickfs.stats.stopping import settled
from pickfs.workloads import workload_class


@dataclass(frozen=True)
class Slot:
    cell: Cell
    repetition: int  # 0-based; each slot is a fresh filesystem with warm-ups then one measured run


def needs(cell: Cell, r: int, method: Method, done: set[tuple[int, int]], values: Mapping[int, Sequence[float]],
          failed: set[int], out_of_time: bool = False) -> bool:
    """Does repetition r of this cell still have to run?"""
    if cell.index in failed or (cell.index, r) in done:
        return False
    if r < method.runs:
        return True
    if method.target_ci is None or r >= method.max_runs or out_of_time:
        return False
    return not settled(values.get(cell.index, ()), method.target_ci, method.runs)


def next_slot(cells: Sequence[Cell], method: Method, done: set[tuple[int, int]],
              values: Mapping[int, Sequence[float]], failed: set[int], out_of_time: bool = False) -> Slot | None:
    """Interleaved: the lowest repetition any cell still needs, cells in plan order (A B C A B C).
    Sequential: every repetition of one cell before the next (A A A B B B)."""
    limit = method.max_runs if method.target_ci is not None else method.runs
    pairs = ((r, c) for r in range(limit) for c in cells) if method.interleave else \
        ((r, c) for c in cells for r in range(limit))
    for r, c in pairs:
        if needs(c, r, method, done, values, failed, out_of_time):
            return Slot(c, r)
    return None


def fixed_slots(cells: Sequence[Cell], method: Method, done: set[tuple[int, int]], failed: set[int]) -> list[Slot]:
    """The repetitions every plan runs (before any stopping rule adds more)."""
    return [Slot(c, r) for r in range(method.runs) for c in cells if c.index not in failed and (c.index, r) not in done]


def estimate_seconds(slot: Slot, method: Method, setup_s: float = 2.5) -> float:
    """A rough wall-time estimate of one slot, for the progress bar."""
    duration = workload_class(slot.cell.workload.name).run_seconds(slot.cell.workload)
    return setup_s + (method.warmup + 1) * (duration + method.quiesce_seconds + 0.3)
