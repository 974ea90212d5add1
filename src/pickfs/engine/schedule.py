"""The order of trials (pure): repetitions interleaved across cells so drift spreads evenly."""

from __future__ import annotations

from dataclasses import dataclass

from pickfs.model import Cell, Method


@dataclass(frozen=True)
class Slot:
    cell: Cell
    repetition: int  # 0-based; each slot is a fresh filesystem with warm-ups then one measured run


def order(cells: tuple[Cell, ...], method: Method) -> list[Slot]:
    """A B C A B C ... when interleaving; A A B B C C otherwise."""
    if method.interleave:
        return [Slot(c, r) for r in range(method.runs) for c in cells]
    return [Slot(c, r) for c in cells for r in range(method.runs)]


def remaining(slots: list[Slot], done: set[tuple[int, int]], failed_cells: set[int]) -> list[Slot]:
    """Slots still to run when resuming: not finished, and not in a cell that cannot be built."""
    return [s for s in slots if (s.cell.index, s.repetition) not in done and s.cell.index not in failed_cells]


def estimate_seconds(slot: Slot, method: Method, setup_s: float = 2.5) -> float:
    """A rough wall-time estimate of one slot, for the progress bar."""
    duration = float(slot.cell.workload.get("duration", 5.0) or 5.0)
    return setup_s + (method.warmup + 1) * (duration + method.quiesce_seconds + 0.3)
