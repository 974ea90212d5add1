"""Execute a plan: every slot on a fresh filesystem, every trial saved as it ends."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from pickfs.crash.runner import StateResult, crash_test, crash_unavailable, state_from_json, state_json
from pickfs.engine.capacity import CapacitySearch
from pickfs.engine.ceiling import limit_notes
from pickfs.engine.choice import how_measured, one_at_a_time
from pickfs.engine.race import Race
from pickfs.engine.schedule import (
    ComparisonKey,
    Slot,
    SlotKey,
    comparison_key,
    comparison_walls,
    estimate_seconds,
    fixed_slots,
    measured_estimates,
    needs,
    next_slot,
    round_order,
    run_seed,
    slot_key,
    slot_walls,
)
from pickfs.engine.sidebyside import SideBySide
from pickfs.engine.standup import stand_up
from pickfs.errors import NoRoom, PickfsError, ResultsWriteFailed
from pickfs.model import Cell, Phase, Plan, Trial, plan_from_dict
from pickfs.monitors.sampler import RunMonitor, cell_scope
from pickfs.stack.filesystems import fs_type, unavailable_reason
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import Provisioned, space_used
from pickfs.stack.quiesce import wait_idle
from pickfs.stack.signals import check_interrupt, interrupted
from pickfs.stack.targets import target_kind
from pickfs.stats.crashbound import settled
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
    if not fs_type(cell.config.fstype).mounts and not cls.raw_ok(cell.workload):
        return (f"{cell.workload.name} needs a filesystem; the raw device runs only "
                f"{', '.join(sorted(n for n, c in REGISTRY.items() if c.supports_raw))}")
    if target_kind(plan.target).builds:
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
        self._crash_spare = 0.0  # seconds a crash test that stopped early left to the next one
        self.observer = observer
        # estimates from measurements: what whole-run slots took, per workload and filesystem,
        # from recent stored runs and then from this run's own slots as they finish
        self.walls: dict[SlotKey, list[float]] = {}
        self.measured: dict[Any, float] = recent_estimates(store, plan)

    def _est(self, slot: Slot) -> float:
        return estimate_seconds(slot, self.plan.method, measured=self.measured)

    def _learn(self, slot: Slot, wall_s: float, remaining: Sequence[Slot]) -> None:
        key = slot_key(slot.cell, self.plan.method)
        self.walls.setdefault(key, []).append(wall_s)
        self.measured[key] = measured_estimates(self.walls)[key]
        reestimate = getattr(self.observer, "reestimate", None)
        if reestimate is not None:
            reestimate(sum(self._est(s) for s in remaining))

    def _fail(self, slot: Slot, message: str, raw: str = "") -> None:
        self._fail_cell(slot.cell, message, raw, repetition=slot.repetition)

    def _fail_cell(self, cell: Cell, message: str, raw: str = "", block: int = 0, repetition: int = 0) -> None:
        self.store.save_trial(Trial(run_id=self.run_id, cell_index=cell.index, repetition=repetition,
                                    phase="measured", started=time.time(), elapsed_s=0.0,
                                    ok=False, raw_output=raw, error=message, block=block))
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
        check_interrupt()
        cell, m = slot.cell, self.plan.method
        cls = workload_class(cell.workload.name)
        with ExitStack() as stack:
            standing = stand_up(stack, self.plan, self.ledger, self.store, self.run_id, cell, slot.repetition)
            prov, endpoint, wl, mount = standing.prov, standing.endpoint, standing.workload, standing.mount
            for i in range(m.warmup + 1):
                phase: Phase = "warmup" if i < m.warmup else "measured"
                notes = self._settle(prov, cold=(i == 0))
                # the monitors attribute I/O to this cell's own processes and device threads only
                scope = cell_scope(prov.disk, prov.info.fstype, endpoint.pidfile if endpoint else "")
                monitor = RunMonitor(prov.disk, m.monitor_interval, scope=scope, mountpoint=prov.info.mountpoint
                                     or None) if m.monitors and phase == "measured" else None
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
                trial = Trial(run_id=self.run_id, cell_index=cell.index, repetition=slot.repetition, phase=phase,
                              started=started, elapsed_s=raw.elapsed_s, ok=True,
                              metrics=metrics, raw_output=raw.text, mount=mount,
                              notes=(*prov.info.notes, *notes, *wl.notes_from(raw.text)),
                              monitor=observed, round=round_no if phase == "measured" else None)
                self.store.save_trial(trial)
                self.observer.trial_saved(slot, trial)
        return metrics.get(cls.primary().name)

    def _one(self, slot: Slot, values: dict[int, list[float]], failed_cells: set[int],
             round_no: int | None = None) -> None:
        est = self._est(slot)
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
            if interrupted(exc):  # a teardown that failed on the way out of a Ctrl-C: still a Ctrl-C
                raise
            failed_cells.add(slot.cell.index)
            self._fail(slot, exc.one_line())
        self.observer.slot_finished(slot, est)

    def _crash(self, cell: Cell, previous: tuple[Trial, ...] = ()) -> None:
        """Crash-test one cell (under the recorder: never a speed figure) and save the result; each state is
        saved as it is checked, and the states an interrupted attempt saved are kept, not checked again."""
        m = self.plan.method
        kept = kept_states(previous, cell.index)
        budget = m.crash_time + self._crash_spare if m.crash_time else 0.0
        self.observer.note(f"{cell.key}: crash test, {m.crash_states} power-cut states"
                           + (f", then more within {budget:.0f} s" if budget else "")
                           + (f" ({len(kept)} kept from the interrupted run)" if kept else ""))
        started = time.time()

        def checked(state: StateResult) -> None:
            self.store.save_trial(Trial(run_id=self.run_id, cell_index=cell.index, repetition=state.index,
                                        phase="crash-state", started=time.time() - state.seconds,
                                        elapsed_s=state.seconds, ok=True, raw_output=state_json(state)))

        try:
            try:
                result = crash_test(cell.config, cell.workload, Path(self.plan.target.workdir), self.ledger,
                                    m.crash_states, m.crash_size, m.crash_duration,
                                    progress=lambda text: self.observer.note(f"{cell.key}: {text}"),
                                    unit=m.crash_unit, recovery_share=m.crash_recovery,
                                    keep=Path(m.crash_keep) if m.crash_keep else None,
                                    strategies=m.crash_strategies, kept=kept, checked=checked,
                                    seed=run_seed(self.run_id, m.seed) + cell.index,  # this run's random moments
                                    budget_s=budget, clear=settled)
            except OSError as exc:  # the host disk filled while the states' images were built: said, not internal
                if exc.errno != errno.ENOSPC:
                    raise
                raise NoRoom(f"no space left on the device holding the work directory {self.plan.target.workdir} "
                             "while the crash test built its images",
                             "free space there, or pass --workdir on a larger filesystem") from None
        except PickfsError as exc:
            if interrupted(exc):  # a teardown that failed on the way out of a Ctrl-C: still a Ctrl-C
                raise
            self.store.save_trial(Trial(run_id=self.run_id, cell_index=cell.index, repetition=0, phase="crash",
                                        started=started, elapsed_s=time.time() - started, ok=False,
                                        error=f"crash test: {exc.one_line()}"))
            self.observer.note(f"{cell.key}: crash test: {exc.one_line()}")
            return
        # a configuration that stopped early with a clear answer leaves its time to those after it
        self._crash_spare = max(0.0, budget - result.check_seconds) if result.stopped else 0.0
        notes = (*result.notes, *([result.stopped] if result.stopped else []))
        self.store.save_trial(Trial(run_id=self.run_id, cell_index=cell.index, repetition=0, phase="crash",
                                    started=started, elapsed_s=time.time() - started, ok=True,
                                    metrics=result.metrics(), raw_output=result.as_json(), notes=notes))

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
                    self.store.save_trial(Trial(run_id=self.run_id, cell_index=cell.index, repetition=0,
                                                phase="crash", started=time.time(), elapsed_s=0.0, ok=False,
                                                error=f"crash test unavailable: {reason}"))
                    continue
                self._crash(cell, previous)
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
        if m.side_by_side and not target_kind(self.plan.target).side_by_side:
            # one spare device holds one filesystem at a time: its configurations cannot stand side by side
            self.observer.note("a device target holds one filesystem at a time: measuring one configuration "
                               "at a time (--one-at-a-time); images or directories can stand side by side")
        self._rate_limits()
        if one_at_a_time(self.plan):
            return self._one_at_a_time(cells, previous, failed_cells)
        for way in how_measured(self.plan):  # the choice the time estimate follows too
            group = [c for c in cells if c.workload.label == way.workload.label]
            if way.approach == "capacity search":
                CapacitySearch(self.plan, self.run_id, self.store, self.ledger, self.observer,
                               self._fail_cell).run(group, previous, failed_cells)
            elif way.sliced:
                plan = replace(self.plan, method=way.method)
                sbs = SideBySide(plan, self.run_id, self.store, self.ledger, self.observer, self._fail_cell)
                if way.approach == "race":
                    Race(sbs, group).run(previous, failed_cells)
                else:
                    sbs.run(group, previous, failed_cells)
            else:
                self._whole_runs(group, previous, failed_cells)
        return failed_cells

    def _rate_limits(self) -> None:
        """Fixed-rate workloads: the client's own ceiling, measured in memory, said and kept with the run."""
        for wl in self.plan.workloads:
            for text in limit_notes(wl, self.ledger):
                self.observer.note(text)
                self.store.add_note(self.run_id, text)

    def _whole_runs(self, cells: list[Cell], previous: tuple[Trial, ...], failed_cells: set[int]) -> None:
        """A workload that cannot be sliced: whole runs (each on a fresh filesystem), every
        configuration once per round in a fresh random order, analysed pair by pair in time."""
        m = self.plan.method
        seed = run_seed(self.run_id, m.seed)
        done, values = measured_so_far(cells, previous)
        first = fixed_slots(cells, m, done, failed_cells)
        self.observer.started(first, sum(self._est(s) for s in first))
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
                    self.observer.extend(self._est(slot))
                done.add((cell.index, r))
                t_slot = time.monotonic()
                self._one(slot, values, failed_cells, round_no=r)
                self._learn(slot, time.monotonic() - t_slot,
                            [s for s in first if (s.cell.index, s.repetition) not in done])

    def _one_at_a_time(self, cells: tuple[Cell, ...], previous: tuple[Trial, ...], failed_cells: set[int]) -> set[int]:
        """The older method: every configuration on its own fresh filesystem, one after another."""
        m = self.plan.method
        done, values = measured_so_far(cells, previous)
        first = fixed_slots(cells, m, done, failed_cells)
        self.observer.started(first, sum(self._est(s) for s in first))
        t0 = time.monotonic()
        while True:
            out_of_time = m.max_seconds is not None and time.monotonic() - t0 > m.max_seconds
            slot = next_slot(cells, m, done, values, failed_cells, out_of_time)
            if slot is None:
                break
            if slot.repetition >= m.runs:
                self.observer.extend(self._est(slot))
            done.add((slot.cell.index, slot.repetition))
            t_slot = time.monotonic()
            self._one(slot, values, failed_cells)
            self._learn(slot, time.monotonic() - t_slot,
                        [s for s in first if (s.cell.index, s.repetition) not in done])
        return failed_cells


def kept_states(previous: tuple[Trial, ...], cell_index: int) -> tuple[StateResult, ...]:
    """The power-cut states of a cell an interrupted crash test saved, each once, in the order they were checked
    (pure)."""
    out: dict[int, StateResult] = {}
    for t in previous:
        if t.cell_index == cell_index and t.phase == "crash-state" and t.ok:
            state = state_from_json(t.raw_output)
            if state is not None:
                out.setdefault(state.index, state)
    return tuple(out[i] for i in sorted(out))


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


RECENT_RUNS = 5  # stored runs read for measured estimates


def recent_estimates(store: ResultStore, plan: Plan) -> dict[Any, float]:
    """Measured times of this plan's whole-run slots and side-by-side comparisons, from the most
    recent stored runs that had them."""
    keys = {slot_key(c, plan.method): c for c in plan.cells()}
    walls: dict[SlotKey, list[float]] = {}
    comparisons: dict[ComparisonKey, list[float]] = {}
    try:
        runs = sorted(store.list_runs(), key=lambda r: r.created, reverse=True)[:RECENT_RUNS]
        for summary in runs:
            record = store.load(summary.id)
            stored = plan_from_dict(record.plan)
            by_index = {c.index: slot_key(c, stored.method) for c in stored.cells()
                        if slot_key(c, stored.method) in keys}
            for k, v in slot_walls(by_index, record.trials, record.created).items():
                walls.setdefault(k, []).extend(v)
            groups = {comparison_key(cs, stored.method): {c.index for c in cs}
                      for cs in (tuple(c for c in stored.cells() if c.workload.label == w.label)
                                 for w in stored.workloads) if cs}
            for ck, wall in comparison_walls(groups, record.trials, record.created).items():
                comparisons.setdefault(ck, []).append(wall)
    except (PickfsError, ValueError, KeyError, TypeError):  # an unreadable old run: estimate without it
        pass
    out: dict[Any, float] = dict(measured_estimates(walls))
    out.update(measured_estimates(comparisons))
    return out


class _CellFailed(Exception):
    """A cell failed and its failure is already recorded."""
