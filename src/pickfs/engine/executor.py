"""Execute a plan: every slot on a fresh filesystem, every trial saved as it ends."""

from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Any

from pickfs.crash.runner import StateResult, crash_test, crash_unavailable, state_from_json, state_json
from pickfs.engine.bench import Bench, Observer
from pickfs.engine.ceiling import limit_notes
from pickfs.engine.choice import how_measured
from pickfs.engine.schedule import (
    ComparisonKey,
    SlotKey,
    comparison_key,
    comparison_walls,
    measured_estimates,
    run_seed,
    slot_key,
    slot_walls,
)
from pickfs.engine.wholeruns import one_at_a_time
from pickfs.errors import NoRoom, PickfsError
from pickfs.model import Cell, Plan, Trial, plan_from_dict
from pickfs.stack.filesystems import fs_type, unavailable_reason
from pickfs.stack.ledger import Ledger
from pickfs.stack.signals import interrupted
from pickfs.stack.targets import target_kind
from pickfs.stats.crashbound import bound, settled
from pickfs.store import ResultStore
from pickfs.workloads import REGISTRY, workload_class

__all__ = ["Executor", "Observer", "cell_unavailable", "kept_states", "recent_estimates"]


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


class Executor:
    def __init__(self, plan: Plan, run_id: str, store: ResultStore, ledger: Ledger, observer: Observer) -> None:
        self.bench = Bench(plan, run_id, store, ledger, observer, measured=recent_estimates(store, plan))
        self._crash_spare = 0.0  # seconds a crash test that stopped early left to the next one

    def _crash(self, cell: Cell, previous: tuple[Trial, ...] = ()) -> None:
        """Crash-test one cell (under the recorder: never a speed figure) and save the result; each state is
        saved as it is checked, and the states an interrupted attempt saved are kept, not checked again."""
        m = self.bench.plan.method
        kept = kept_states(previous, cell.index)
        budget = m.crash.time + self._crash_spare if m.crash.time else 0.0
        self.bench.observer.note(f"{cell.key}: crash test, {m.crash.states} power-cut states"
                           + (f", then more within {budget:.0f} s" if budget else "")
                           + (f" or until a loss in 1 of {m.crash.bound:,} is ruled out" if budget and m.crash.bound
                              else "")
                           + (f" ({len(kept)} kept from the interrupted run)" if kept else ""))
        started = time.time()

        def checked(state: StateResult) -> None:
            self.bench.store.save_trial(Trial(run_id=self.bench.run_id, cell_index=cell.index, repetition=state.index,
                                        phase="crash-state", started=time.time() - state.seconds,
                                        elapsed_s=state.seconds, ok=True, raw_output=state_json(state)))

        try:
            try:
                result = crash_test(cell.config, cell.workload, Path(self.bench.plan.target.workdir), self.bench.ledger,
                                    m.crash.states, m.crash.size, m.crash.duration,
                                    progress=lambda text: self.bench.observer.note(f"{cell.key}: {text}"),
                                    unit=m.crash.unit, recovery_share=m.crash.recovery,
                                    keep=Path(m.crash.keep) if m.crash.keep else None,
                                    strategies=m.crash.strategies, kept=kept, checked=checked,
                                    seed=run_seed(self.bench.run_id, m.seed) + cell.index,  # this run's random moments
                                    budget_s=budget, clear=settled, goal=m.crash.bound,
                                    rules_out=lambda n: bound(0, n).rules_out_one_in)
            except OSError as exc:  # the host disk filled while the states' images were built: said, not internal
                if exc.errno != errno.ENOSPC:
                    raise
                raise NoRoom(f"no space left on the device holding the work directory {self.bench.plan.target.workdir} "
                             "while the crash test built its images",
                             "free space there, or pass --workdir on a larger filesystem") from None
        except PickfsError as exc:
            if interrupted(exc):  # a teardown that failed on the way out of a Ctrl-C: still a Ctrl-C
                raise
            self.bench.store.save_trial(Trial(run_id=self.bench.run_id, cell_index=cell.index, repetition=0, phase="crash",
                                        started=started, elapsed_s=time.time() - started, ok=False,
                                        error=f"crash test: {exc.one_line()}"))
            self.bench.observer.note(f"{cell.key}: crash test: {exc.one_line()}")
            return
        # a configuration that stopped early with a clear answer leaves its time to those after it
        self._crash_spare = max(0.0, budget - result.check_seconds) if result.stopped else 0.0
        notes = (*result.notes, *([result.stopped] if result.stopped else []))
        self.bench.store.save_trial(Trial(run_id=self.bench.run_id, cell_index=cell.index, repetition=0, phase="crash",
                                    started=started, elapsed_s=time.time() - started, ok=True,
                                    metrics=result.metrics(), raw_output=result.as_json(), notes=notes))

    def execute(self, previous: tuple[Trial, ...] = ()) -> set[int]:
        """Run every slot not already measured in `previous`; return the indexes of failed cells."""
        failed = self._speed(previous) if self.bench.plan.method.speed else set()
        if self.bench.plan.method.crash.states:
            tested = {t.cell_index for t in previous if t.phase == "crash" and t.ok}
            for cell in self.bench.plan.cells():
                if cell.index in tested:
                    continue
                reason = crash_unavailable(cell.config, cell.workload)
                if reason:
                    self.bench.store.save_trial(Trial(run_id=self.bench.run_id, cell_index=cell.index, repetition=0,
                                                phase="crash", started=time.time(), elapsed_s=0.0, ok=False,
                                                error=f"crash test unavailable: {reason}"))
                    continue
                self._crash(cell, previous)
        return failed

    def _speed(self, previous: tuple[Trial, ...]) -> set[int]:
        cells = self.bench.plan.cells()
        failed_cells = {t.cell_index for t in previous if not t.ok and t.phase != "crash"}
        for cell in cells:
            if cell.index in failed_cells:
                continue
            reason = cell_unavailable(cell, self.bench.plan)
            if reason:
                failed_cells.add(cell.index)
                self.bench.fail(cell, f"unavailable: {reason}")
        if self.bench.plan.method.side_by_side and one_at_a_time(self.bench.plan):
            # one spare device holds one filesystem at a time: its configurations cannot stand side by side
            self.bench.observer.note("a device target holds one filesystem at a time: measuring one configuration "
                               "at a time (--one-at-a-time); images or directories can stand side by side")
        self._rate_limits()
        ways = how_measured(self.bench.plan)  # the choice the dry run and the time estimate follow too
        for i, way in enumerate(ways):
            if way.way.whole_plan and any(w.way is way.way for w in ways[:i]):
                continue  # measured with the first workload it fits, all together
            labels = {w.workload.label for w in ways if w.way is way.way} if way.way.whole_plan \
                else {way.workload.label}
            group = [c for c in cells if c.workload.label in labels]
            way.way.measure(self.bench.with_method(way.method), group, previous, failed_cells)
        return failed_cells

    def _rate_limits(self) -> None:
        """Fixed-rate workloads: the client's own ceiling, measured in memory, said and kept with the run."""
        for wl in self.bench.plan.workloads:
            for text in limit_notes(wl, self.bench.ledger):
                self.bench.observer.note(text)
                self.bench.store.add_note(self.bench.run_id, text)


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
