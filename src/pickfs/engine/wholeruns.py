"""Whole runs, each on a fresh filesystem: one at a time (the older method, and what a device target allows), or
alternated in rounds for a workload that cannot be sliced. Both measure a slot the same way (`run_slot`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from pickfs.engine.bench import Bench, Once
from pickfs.engine.schedule import Slot, fixed_slots, needs, next_slot, round_order, run_seed
from pickfs.engine.standup import stand_up
from pickfs.model import Cell, Method, Phase, Plan, Trial, WorkloadSpec
from pickfs.monitors.sampler import RunMonitor, cell_scope
from pickfs.stack.provision import Provisioned
from pickfs.stack.quiesce import wait_idle
from pickfs.stack.signals import check_interrupt
from pickfs.stack.targets import target_kind
from pickfs.workloads import workload_class


def drop_caches() -> None:
    os.sync()
    if os.geteuid() == 0:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")


def settle(m: Method, prov: Provisioned, cold: bool) -> list[str]:
    """Before a whole run: the page cache dropped (the first, when asked), written back, the device idle."""
    if cold and m.whole.drop_caches:
        drop_caches()
    else:
        os.sync()
    if prov.disk:
        idle, waited = wait_idle(prov.disk, m.quiesce_seconds, m.quiesce_timeout)
        if not idle:
            return [f"device still busy after {waited:.0f}s of waiting; run started anyway"]
    return []


def run_slot(bench: Bench, slot: Slot, round_no: int | None = None) -> float | None:
    """Build, prepare, warm up and measure one slot on its own fresh filesystem; the measured primary value."""
    check_interrupt()
    cell, m = slot.cell, bench.plan.method
    with ExitStack() as stack:
        standing = stand_up(stack, bench.plan, bench.ledger, bench.store, bench.run_id, cell, slot.repetition)
        prov = standing.prov
        for i in range(m.warmup + 1):
            phase: Phase = "warmup" if i < m.warmup else "measured"
            notes = settle(m, prov, cold=(i == 0))
            # the monitors attribute I/O to this cell's own processes and device threads only
            scope = cell_scope(prov.disk, prov.info.fstype, standing.endpoint.pidfile if standing.endpoint else "")
            monitor = RunMonitor(prov.disk, m.monitor_interval, scope=scope, mountpoint=prov.info.mountpoint
                                 or None) if m.monitors and phase == "measured" else None
            trial = bench.measure_once(cell, standing, Once(
                cell.workload, phase, repetition=slot.repetition, monitor=monitor, inside=standing.limited,
                notes=tuple(notes), round=round_no if phase == "measured" else None))
            bench.observer.trial_saved(slot, trial)
    return trial.metrics.get(workload_class(cell.workload.name).primary().name)


def one_slot(bench: Bench, slot: Slot, values: dict[int, list[float]], failed: set[int],
             round_no: int | None = None) -> None:
    est = bench.estimate(slot)
    bench.observer.slot_started(slot)
    with bench.failing(slot.cell, failed, repetition=slot.repetition):
        value = run_slot(bench, slot, round_no)
        if value is not None:
            values[slot.cell.index].append(value)
    bench.observer.slot_finished(slot, est)


def measured_so_far(cells: Sequence[Cell], previous: tuple[Trial, ...]) -> tuple[set[tuple[int, int]],
                                                                                dict[int, list[float]]]:
    """Of these cells, the (cell, repetition) pairs already measured and their primary values in time order."""
    by_index = {c.index: c for c in cells}
    done: set[tuple[int, int]] = set()
    values: dict[int, list[float]] = {i: [] for i in by_index}
    for t in sorted(previous, key=lambda t: t.started):
        if t.cell_index not in by_index or t.phase != "measured" or not t.ok:
            continue
        done.add((t.cell_index, t.repetition))
        name = workload_class(by_index[t.cell_index].workload.name).primary().name
        if name in t.metrics:
            values[t.cell_index].append(t.metrics[name])
    return done, values


# The order whole runs are measured in: given the cells, what is measured so far (done, and the primary values) and
# whether the time budget is spent, each slot to run next and the round it counts in (None: in no round). A
# generator, it sees the slots the caller measured meanwhile.
SlotOrder = Callable[[Bench, list[Cell], set[tuple[int, int]], dict[int, list[float]], set[int], Callable[[], bool]],
                     Iterator[tuple[Slot, int | None]]]


def _in_turn(bench: Bench, cells: list[Cell], done: set[tuple[int, int]], values: dict[int, list[float]],
            failed: set[int], out_of_time: Callable[[], bool]) -> Iterator[tuple[Slot, int | None]]:
    """One at a time: the slot that needs it most next, until every cell has its runs (or its interval)."""
    m = bench.plan.method
    while (slot := next_slot(cells, m, done, values, failed, out_of_time())) is not None:
        yield slot, None


def _in_rounds(bench: Bench, cells: list[Cell], done: set[tuple[int, int]], values: dict[int, list[float]],
              failed: set[int], out_of_time: Callable[[], bool]) -> Iterator[tuple[Slot, int | None]]:
    """Rounds: every configuration that still needs a run once per round, in a fresh random order."""
    m = bench.plan.method
    seed = run_seed(bench.run_id, m.seed)
    for r in range(m.max_runs if m.target_ci is not None else m.runs):
        spent = out_of_time()
        todo = [c for c in round_order(cells, seed, 0, r) if needs(c, r, m, done, values, failed, spent)]
        if not todo and r >= m.runs:
            break
        for cell in todo:
            yield Slot(cell, r), r


def _measure_slots(bench: Bench, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int],
                  order: SlotOrder) -> None:
    """Whole runs of `cells` in `order`, from what a resumed run kept; the time left said again after each."""
    m = bench.plan.method
    done, values = measured_so_far(cells, previous)
    first = fixed_slots(cells, m, done, failed)
    bench.observer.started(first, sum(bench.estimate(s) for s in first))
    t0 = time.monotonic()

    def out_of_time() -> bool:
        return m.max_seconds is not None and time.monotonic() - t0 > m.max_seconds

    for slot, round_no in order(bench, cells, done, values, failed, out_of_time):
        if slot.repetition >= m.runs:
            bench.observer.extend(bench.estimate(slot))
        done.add((slot.cell.index, slot.repetition))
        t_slot = time.monotonic()
        one_slot(bench, slot, values, failed, round_no)
        bench.learn(slot, time.monotonic() - t_slot, [s for s in first if (s.cell.index, s.repetition) not in done])


def one_at_a_time(plan: Plan) -> bool:
    """The older method, every cell one after another: asked for, or forced by a device target, which holds one
    filesystem at a time (pure)."""
    return not plan.method.side_by_side or not target_kind(plan.target).side_by_side


def whole_runs_until(m: Method) -> str:
    """What whole runs go on until, after their runs (pure)."""
    if m.target_ci is None:
        return f"each configuration has its {m.runs} runs"
    return f"each interval is within ±{m.target_ci:.0%}"


def _whole_run_lines(m: Method) -> list[str]:
    lines = []
    if m.target_ci is not None:
        lines.append(f"  then until {whole_runs_until(m)}, at most {m.max_runs} runs"
                     + (f" or {m.max_seconds / 60:g} min" if m.max_seconds is not None else ""))
    return lines


@dataclass(frozen=True)
class OneAtATime:
    """Every cell on its own fresh filesystem, one after another, until each has its runs (or its interval)."""

    name: str = "one at a time"
    sliced: bool = False
    whole_plan: bool = True

    def fits(self, plan: Plan, spec: WorkloadSpec) -> bool:
        return one_at_a_time(plan)

    def method_for(self, plan: Plan, spec: WorkloadSpec, share: float) -> Method:
        return plan.method

    def until(self, m: Method) -> str:
        return whole_runs_until(m)

    def describe(self, m: Method) -> list[str]:
        order = "interleaved (A B C A B C)" if m.whole.interleave else "sequential (A A B B)"
        return [f"{m.runs} run(s) per cell after {m.warmup} warm-up(s), each on a fresh filesystem, {order}",
                *_whole_run_lines(m)]

    def words(self, m: Method) -> str:
        return f"{m.runs} runs each after {m.warmup} warm-up"

    def measure(self, bench: Bench, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        _measure_slots(bench, cells, previous, failed, _in_turn)


@dataclass(frozen=True)
class WholeRuns:
    """A workload that cannot be sliced, beside sliced ones: whole runs (each on a fresh filesystem), every
    configuration once per round in a fresh random order, analysed pair by pair in time."""

    name: str = "whole runs"
    sliced: bool = False
    whole_plan: bool = False

    def fits(self, plan: Plan, spec: WorkloadSpec) -> bool:
        return True  # the last resort: any workload can be measured in whole runs

    def method_for(self, plan: Plan, spec: WorkloadSpec, share: float) -> Method:
        return plan.method

    def until(self, m: Method) -> str:
        return whole_runs_until(m)

    def describe(self, m: Method) -> list[str]:
        return [f"{m.runs} whole run(s) per configuration, each on a fresh filesystem, in random-order rounds "
                f"after {m.warmup} warm-up(s)", *_whole_run_lines(m)]

    def words(self, m: Method) -> str:
        return f"{m.runs} whole runs each in random-order rounds"

    def measure(self, bench: Bench, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        _measure_slots(bench, cells, previous, failed, _in_rounds)


ONE_AT_A_TIME = OneAtATime()
WHOLE_RUNS = WholeRuns()
