"""Which trial comes next (pure): interleaved repetitions, and the stopping rule."""

from __future__ import annotations

import hashlib
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pickfs.analysis.race import TARGET
from pickfs.model import Cell, Method, StopReason, Trial
from pickfs.stats.stopping import settled
from pickfs.workloads import workload_class

T = TypeVar("T")
K = TypeVar("K")


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
    pairs = ((r, c) for r in range(limit) for c in cells) if method.whole.interleave else \
        ((r, c) for c in cells for r in range(limit))
    for r, c in pairs:
        if needs(c, r, method, done, values, failed, out_of_time):
            return Slot(c, r)
    return None


def fixed_slots(cells: Sequence[Cell], method: Method, done: set[tuple[int, int]], failed: set[int]) -> list[Slot]:
    """The repetitions every plan runs (before any stopping rule adds more)."""
    return [Slot(c, r) for r in range(method.runs) for c in cells if c.index not in failed and (c.index, r) not in done]


SETUP_S = 2.5  # building one configuration (mkfs, mount, server start), for estimates
RUN_OVERHEAD_S = 0.3  # per run or slice: starting the client, syncfs, saving the trial

# What whole-run slots took before, by (workload and its settings, filesystem type, warm-ups):
# seconds from the end of the slot before to the end of its measured run (setup, warm-ups,
# settling, the run, and the teardown of the one before).
SlotKey = tuple[str, str, int]


def slot_key(cell: Cell, method: Method) -> SlotKey:
    settings = ",".join(f"{k}={v!r}" for k, v in cell.workload.settings)
    c = cell.config
    config = f"{c.name}:{c.fstype}:{' '.join(c.mkfs_options)}:{','.join(c.mount_options)}:{c.scheduler or ''}"
    return (f"{cell.workload.name}[{settings}]", config, method.warmup)


def slot_walls(keys: Mapping[int, SlotKey], trials: Sequence[Trial], created: float) -> dict[SlotKey, list[float]]:
    """From one stored run: the wall time of each whole-run slot, by key (pure). `keys` maps a cell
    index to its key; slices (side by side, they carry slice_s) and failed trials are left out."""
    out: dict[SlotKey, list[float]] = {}
    prev_end = created
    for t in sorted((t for t in trials if t.ok and t.phase in ("warmup", "measured")), key=lambda t: t.started):
        end = t.started + t.elapsed_s
        if t.phase != "measured":
            continue
        if "slice_s" not in t.metrics and t.cell_index in keys and end > prev_end:
            out.setdefault(keys[t.cell_index], []).append(end - prev_end)
        prev_end = end
    return out


def measured_estimates(walls: Mapping[K, Sequence[float]]) -> dict[K, float]:
    """The median wall of each key's slots (pure)."""
    return {k: statistics.median(v) for k, v in walls.items() if v}


# A side-by-side comparison as a whole, by (workload and its settings, its filesystem types, the
# method's settings that set its length): seconds from the end of what ran before to its last slice.
ComparisonKey = tuple[str, tuple[str, ...], str]


def comparison_key(cells: Sequence[Cell], method: Method) -> ComparisonKey:
    m = method
    how = f"blocks={m.slices.blocks},rounds={m.slices.rounds},slice={m.slices.slice_seconds},max={m.max_seconds},ci={m.target_ci}," \
          f"warmup={m.warmup}"
    return (slot_key(cells[0], method)[0], tuple(sorted(slot_key(c, method)[1] for c in cells)), how)


def comparison_walls(groups: Mapping[ComparisonKey, set[int]], trials: Sequence[Trial],
                     created: float) -> dict[ComparisonKey, float]:
    """From one stored run: the wall time of each side-by-side comparison (pure). `groups` maps a
    comparison's key to its cells' indexes; a comparison counts only if its trials are slices."""
    ok = sorted((t for t in trials if t.ok and t.phase in ("warmup", "measured")), key=lambda t: t.started)
    out: dict[ComparisonKey, float] = {}
    for key, indexes in groups.items():
        own = [t for t in ok if t.cell_index in indexes]
        if not own or not any("slice_s" in t.metrics for t in own):
            continue
        first = own[0].started
        before = [t.started + t.elapsed_s for t in ok if t.cell_index not in indexes and t.started < first]
        end = max(t.started + t.elapsed_s for t in own)
        out[key] = end - max(before, default=created)
    return out


def estimate_seconds(slot: Slot, method: Method, setup_s: float = SETUP_S,
                     measured: Mapping[SlotKey, float] | None = None) -> float:
    """The wall-time estimate of one slot: what the same workload on the same filesystem took when
    it was measured (this run's slots so far, or a stored run's), else from the workload's length."""
    if measured:
        seen = measured.get(slot_key(slot.cell, method))
        if seen is not None:
            return seen
    duration = workload_class(slot.cell.workload.name).run_seconds(slot.cell.workload)
    return setup_s + (method.warmup + 1) * (duration + method.quiesce_seconds + RUN_OVERHEAD_S)


# -- side by side: rounds ---------------------------------------------------------------------
SIDE_BY_SIDE_TARGET = TARGET  # stop once every comparison's 95% interval is within +/- 5% (the race's judge's) ...
SIDE_BY_SIDE_BUDGET = 540.0  # ... or after this many seconds per workload, setup included
SIDE_BY_SIDE_MIN_ROUNDS = 3
SETUP_SHARE = 0.2  # of the budget, what standing up the blocks may take when their number is automatic
AUTO_BLOCKS = (2, 6)


def auto_blocks(setup_s: float, budget_s: float) -> int:
    """How many blocks to stand up, from what standing up one took (pure): as many as fit
    SETUP_SHARE of the budget, within AUTO_BLOCKS. More blocks average over more mkfs; each
    costs its setup, while the slices a configuration gets in the budget stay about the same."""
    lo, hi = AUTO_BLOCKS
    return max(lo, min(hi, int(SETUP_SHARE * budget_s // max(setup_s, 1e-3))))


def round_order(items: Sequence[T], seed: int, block: int, round_no: int) -> list[T]:
    """Every item once, in a fresh random order for each round, reproducible from the seed."""
    order = list(items)
    random.Random(f"{seed}/{block}/{round_no}").shuffle(order)
    return order


def standing_up_order(names: Sequence[str], copies: Mapping[str, int], seed: int, block: int) -> list[str]:
    """The order a block's images are made in (pure): the configurations shuffled, reproducibly from the seed, and
    each one's copies spread evenly through the block. Whatever the time an image is made at does to it (what
    the host still writes back of the images before it, how long it stood before the first round) then falls on
    no configuration, and on no baseline's copies, as a whole."""
    order = [n for n in names if copies.get(n, 1) <= 1]
    random.Random(f"{seed}/standing/{block}").shuffle(order)
    for name in names:
        k = copies.get(name, 1)
        if k > 1:
            n = len(order) + k
            slots = [min(n - 1, int((i + 0.5) * n / k)) for i in range(k)]
            for at in slots:
                order.insert(min(at, len(order)), name)
    return order


def run_seed(run_id: str, given: int | None = None) -> int:
    """The seed of the rounds' order: the one given (--seed), else one derived from the run id, so a
    resumed run keeps its order."""
    return given if given is not None else int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16)


UNBOUNDED_ROUNDS = 10_000  # rounds without a target interval: the time budget ends them


def round_budget(method: Method, share: float = 1.0) -> RoundBudget:
    """The stopping rule of a side-by-side comparison (a resumed run gets the `share` of the time
    budget its missing blocks had)."""
    adaptive = method.slices.rounds is None or method.target_ci is not None or method.max_seconds is not None
    budget = method.max_seconds if method.max_seconds is not None else SIDE_BY_SIDE_BUDGET
    return RoundBudget(method.slices.rounds or SIDE_BY_SIDE_MIN_ROUNDS, budget * share,
                       method.target_ci if method.target_ci is not None else SIDE_BY_SIDE_TARGET,
                       fixed=not adaptive,
                       max_rounds=method.max_runs if method.target_ci is not None else UNBOUNDED_ROUNDS)


@dataclass(frozen=True)
class RoundBudget:
    """When rounds stop (pure): never before `min_rounds`; then as soon as every comparison has
    settled, or at `max_rounds`, or when another round would overrun the time budget (setup included)."""

    min_rounds: int
    budget_s: float
    target: float
    fixed: bool = False  # exactly min_rounds: no stopping rule
    max_rounds: int = UNBOUNDED_ROUNDS  # with a target interval (--target-ci), its --max-runs

    def stop(self, rounds_done: int, settled: bool, now: float, deadline: float, round_s: float) -> StopReason | None:
        """Why rounds stop after `rounds_done`; None: another round."""
        if rounds_done < self.min_rounds:
            return None
        if settled:
            return "settled"
        if self.fixed or rounds_done >= self.max_rounds:
            return "rounds"
        return None if now + round_s <= deadline else "budget"

    def another_round(self, rounds_done: int, settled: bool, now: float, deadline: float, round_s: float) -> bool:
        return self.stop(rounds_done, settled, now, deadline, round_s) is None
