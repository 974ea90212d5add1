"""Execute a plan: every slot on a fresh filesystem, every trial saved as it ends."""

from __future__ import annotations

import os
import time
from contextlib import ExitStack, nullcontext
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from pickfs.crash.runner import crash_test, crash_unavailable
from pickfs.errors import PickfsError, ResultsWriteFailed
from pickfs.model import Cell, Plan, Trial
from pickfs.engine.schedule import Slot, estimate_seconds, fixed_slots, needs, next_slot, round_order, run_seed
from pickfs.engine.sidebyside import SideBySide
from pickfs.engine.standup import stand_up
from pickfs.stack.filesystems import RAW, unavailable_reason
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import Provisioned, space_used
from pickfs.stack.quiesce import wait_idle
from pickfs.monitors.sampler import RunMonitor
from pickfs.store import ResultStore
from pickfs.workloads import REGISTRY, workload_class


class Observer(Protocol):
    def started(self, slots: list[Slot], estimate_s: float) -> None: ...
    def slot_started(self, slot: Slot) -> None: ...
    def trial_saved(self, slot: Slot, trial: Trial) -> None: ...
    def slot_finished(self, slot: Slot, estimate_s: float) -> None: ...
    def extend(self, estimate_s: float) -> None: ...
    def note(self, text: str) -> None: ...
    def rounds_started(self, label: str, budget_s: float, blocks: int | None, configs: int) -> None: ...
    def round_finished(self, label: str, block: int, round_no: int, widest: float | None) -> None: ...


def cell_unavailable(cell: Cell, plan: Plan) -> str | None:
    cls = workload_class(cell.workload.name)
    if cell.config.fstype == RAW and not cls.raw_ok(cell.workload):
        return (f"{cell.workload.name} needs a filesystem; the raw device runs only "
                f"{', '.join(sorted(n for n, c in REGISTRY.items() if c.supports_raw))}")
    if plan.target.kind != "directory":
        reason = unavailable_reason(cell.config.fstype)
        if reason:
            return reason
    return cls.unavailable_reason(cell.workload)


def drop_caches() -> None:
    os.sync()
    if os.geteuid() == 0:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")


class Executor:
    def __init__(self, plan: Plan, run_id: str, store: ResultStore, ledger: Ledger, observer: Observer) -> None:
        self.plan = plan
        self.run_id = run_id
        self.store = store
        self.ledger = ledger
        self.observer = observer

    def _fail(self, slot: Slot, message: str, raw: str = "") -> None:
        self._fail_cell(slot.cell, message, raw, repetition=slot.repetition)

    def _fail_cell(self, cell: Cell, message: str, raw: str = "", block: int = 0, repetition: int = 0) -> None:
        self.store.save_trial(Trial(self.run_id, cell.index, repetition, "measured", time.time(), 0.0,
                                    False, raw_output=raw, error=message, block=block))
        self.observer.note(f"{cell.key}: {message}")

    def _settle(self, prov: Provisioned, cold: bool) -> list[str]:
        m = self.plan.method
        if cold and m.drop_caches:
            drop_caches()
        else:
            os.sync()
        if prov.disk:
            idle, waited = wait_idle(prov.disk, m.quiesce_seconds, m.quiesce_timeout)
            if not idle:
                return [f"device still busy after {waited:.0f}s of waiting; run started anyway"]
        return []

    def _run_slot(self, slot: Slot, round_no: int | None = None) -> float | None:
        """Build, prepare, warm up and measure one slot; return the measured primary value."""
        cell, m = slot.cell, self.plan.method
        cls = workload_class(cell.workload.name)
        with ExitStack() as stack:
            standing = stand_up(stack, self.plan, self.ledger, self.store, self.run_id, cell, slot.repetition)
            prov, endpoint, wl, mount = standing.prov, standing.endpoint, standing.workload, standing.mount
            for i in range(m.warmup + 1):
                phase = "warmup" if i < m.warmup else "measured"
                notes = self._settle(prov, cold=(i == 0))
                monitor = RunMonitor(prov.disk, m.monitor_interval) if m.monitors and phase == "measured" else None
                started = time.time()
                with monitor or nullcontext(), standing.limited():
                    raw = wl.run(cell.workload, prov.datadir, endpoint)
                try:
                    metrics = wl.parse(raw.text)
                except (ValueError, KeyError) as exc:
                    self._fail(slot, f"could not parse {cell.workload.name} output: {exc}", raw.text)
                    raise _CellFailed() from None
                observed = monitor.result() if monitor else {}
                if observed and prov.info.mountpoint:
                    observed["totals"]["space_used_bytes"] = space_used(prov.info.mountpoint)
                trial = Trial(self.run_id, cell.index, slot.repetition, phase, started, raw.elapsed_s, True,
                              metrics, raw.text, mount, (*prov.info.notes, *notes, *wl.notes_from(raw.text)),
                              monitor=observed, round=round_no if phase == "measured" else None)
                self.store.save_trial(trial)
                self.observer.trial_saved(slot, trial)
        return metrics.get(cls.primary().name)

    def _one(self, slot: Slot, values: dict[int, list[float]], failed_cells: set[int],
             round_no: int | None = None) -> None:
        est = estimate_seconds(slot, self.plan.method)
        self.observer.slot_started(slot)
        try:
            value = self._run_slot(slot, round_no)
            if value is not None:
                values[slot.cell.index].append(value)
        except _CellFailed:
            failed_cells.add(slot.cell.index)
        except ResultsWriteFailed:
            raise  # nothing more can be kept: stop the run
        except PickfsError as exc:
            failed_cells.add(slot.cell.index)
            self._fail(slot, exc.one_line())
        self.observer.slot_finished(slot, est)

    def _crash(self, cell: Cell) -> None:
        """Crash-test one cell (under the recorder: never a speed figure) and save the result."""
        m = self.plan.method
        self.observer.note(f"{cell.key}: crash test, {m.crash_states} power-cut states")
        started = time.time()
        try:
            result = crash_test(cell.config, cell.workload, Path(self.plan.target.workdir), self.ledger,
                                m.crash_states, m.crash_size, m.crash_duration,
                                progress=lambda text: self.observer.note(f"{cell.key}: {text}"))
        except PickfsError as exc:
            self.store.save_trial(Trial(self.run_id, cell.index, 0, "crash", started, time.time() - started, False,
                                        error=f"crash test: {exc.one_line()}"))
            self.observer.note(f"{cell.key}: crash test: {exc.one_line()}")
            return
        self.store.save_trial(Trial(self.run_id, cell.index, 0, "crash", started, time.time() - started, True,
                                    result.metrics(), result.as_json()))

    def execute(self, previous: tuple[Trial, ...] = ()) -> set[int]:
        """Run every slot not already measured in `previous`; return the indexes of failed cells."""
        failed = self._speed(previous) if self.plan.method.speed else set()
        if self.plan.method.crash_states:
            tested = {t.cell_index for t in previous if t.phase == "crash" and t.ok}
            for cell in self.plan.cells():
                if cell.index in tested:
                    continue
                reason = crash_unavailable(cell.config, cell.workload)
                if reason:
                    self.store.save_trial(Trial(self.run_id, cell.index, 0, "crash", time.time(), 0.0, False,
                                                error=f"crash test unavailable: {reason}"))
                    continue
                self._crash(cell)
        return failed

    def _speed(self, previous: tuple[Trial, ...]) -> set[int]:
        m = self.plan.method
        cells = self.plan.cells()
        failed_cells = {t.cell_index for t in previous if not t.ok and t.phase != "crash"}
        for cell in cells:
            if cell.index in failed_cells:
                continue
            reason = cell_unavailable(cell, self.plan)
            if reason:
                failed_cells.add(cell.index)
                self._fail(Slot(cell, 0), f"unavailable: {reason}")
        if m.side_by_side and self.plan.target.kind == "device":
            # one spare device holds one filesystem at a time: its configurations cannot stand side by side
            self.observer.note("a device target holds one filesystem at a time: measuring one configuration "
                               "at a time (--one-at-a-time); images or directories can stand side by side")
        if not m.side_by_side or self.plan.target.kind == "device":
            return self._one_at_a_time(cells, previous, failed_cells)
        for wl in self.plan.workloads:
            group = [c for c in cells if c.workload.label == wl.label]
            if workload_class(wl.name).sliceable:
                SideBySide(self.plan, self.run_id, self.store, self.ledger, self.observer,
                           self._fail_cell).run(group, previous, failed_cells)
            else:
                self._whole_runs(group, previous, failed_cells)
        return failed_cells

    def _whole_runs(self, cells: list[Cell], previous: tuple[Trial, ...], failed_cells: set[int]) -> None:
        """A workload that cannot be sliced: whole runs (each on a fresh filesystem), every
        configuration once per round in a fresh random order, analysed pair by pair in time."""
        m = self.plan.method
        seed = run_seed(self.run_id, m.seed)
        done, values = measured_so_far(cells, previous)
        first = fixed_slots(cells, m, done, failed_cells)
        self.observer.started(first, sum(estimate_seconds(s, m) for s in first))
        t0 = time.monotonic()
        limit = m.max_runs if m.target_ci is not None else m.runs
        for r in range(limit):
            out_of_time = m.max_seconds is not None and time.monotonic() - t0 > m.max_seconds
            todo = [c for c in round_order(cells, seed, 0, r)
                    if needs(c, r, m, done, values, failed_cells, out_of_time)]
            if not todo:
                if r >= m.runs:
                    break
                continue
            for cell in todo:
                slot = Slot(cell, r)
                if r >= m.runs:
                    self.observer.extend(estimate_seconds(slot, m))
                done.add((cell.index, r))
                self._one(slot, values, failed_cells, round_no=r)

    def _one_at_a_time(self, cells: tuple[Cell, ...], previous: tuple[Trial, ...], failed_cells: set[int]) -> set[int]:
        """The older method: every configuration on its own fresh filesystem, one after another."""
        m = self.plan.method
        done, values = measured_so_far(cells, previous)
        first = fixed_slots(cells, m, done, failed_cells)
        self.observer.started(first, sum(estimate_seconds(s, m) for s in first))
        t0 = time.monotonic()
        while True:
            out_of_time = m.max_seconds is not None and time.monotonic() - t0 > m.max_seconds
            slot = next_slot(cells, m, done, values, failed_cells, out_of_time)
            if slot is None:
                break
            if slot.repetition >= m.runs:
                self.observer.extend(estimate_seconds(slot, m))
            done.add((slot.cell.index, slot.repetition))
            self._one(slot, values, failed_cells)
        return failed_cells


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


class _CellFailed(Exception):
    """A cell failed and its failure is already recorded."""
