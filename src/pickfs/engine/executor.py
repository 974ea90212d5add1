"""Execute a plan: every slot on a fresh filesystem, every trial saved as it ends."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol

from pickfs.errors import PickfsError
from pickfs.model import Cell, Plan, Trial
from pickfs.engine.schedule import Slot, estimate_seconds, order, remaining
from pickfs.stack.filesystems import unavailable_reason
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import Provisioned, provision
from pickfs.stack.quiesce import wait_idle
from pickfs.store import ResultStore
from pickfs.workloads import workload_class


class Observer(Protocol):
    def started(self, slots: list[Slot], estimate_s: float) -> None: ...
    def slot_started(self, slot: Slot) -> None: ...
    def trial_saved(self, slot: Slot, trial: Trial) -> None: ...
    def slot_finished(self, slot: Slot, estimate_s: float) -> None: ...
    def note(self, text: str) -> None: ...


def cell_unavailable(cell: Cell, plan: Plan) -> str | None:
    if plan.target.kind != "directory":
        reason = unavailable_reason(cell.config.fstype)
        if reason:
            return reason
    return workload_class(cell.workload.name).unavailable_reason()


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
        self.store.save_trial(Trial(self.run_id, slot.cell.index, slot.repetition, "measured", time.time(), 0.0,
                                    False, raw_output=raw, error=message))
        self.observer.note(f"{slot.cell.key}: {message}")

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

    def _run_slot(self, slot: Slot) -> None:
        cell, m = slot.cell, self.plan.method
        wl = workload_class(cell.workload.name)()
        with provision(cell.config, self.plan.target, self.ledger, m.quiesce_seconds, m.quiesce_timeout) as prov:
            mount = prov.info.as_dict()
            started = time.time()
            prep = wl.prepare(cell.workload, prov.datadir)
            self.store.save_trial(Trial(self.run_id, cell.index, slot.repetition, "prepare", started, prep.elapsed_s,
                                        True, {"elapsed_s": prep.elapsed_s}, prep.text, mount, prov.info.notes))
            for i in range(m.warmup + 1):
                phase = "warmup" if i < m.warmup else "measured"
                notes = self._settle(prov, cold=(i == 0))
                started = time.time()
                raw = wl.run(cell.workload, prov.datadir)
                try:
                    metrics = wl.parse(raw.text)
                except (ValueError, KeyError) as exc:
                    self._fail(slot, f"could not parse {cell.workload.name} output: {exc}", raw.text)
                    raise _CellFailed() from None
                trial = Trial(self.run_id, cell.index, slot.repetition, phase, started, raw.elapsed_s, True,
                              metrics, raw.text, mount, (*prov.info.notes, *notes))
                self.store.save_trial(trial)
                self.observer.trial_saved(slot, trial)

    def execute(self, done: set[tuple[int, int]] | None = None, failed: set[int] | None = None) -> set[int]:
        """Run every slot not done; return the indexes of cells that failed."""
        failed_cells = set(failed or ())
        cells = self.plan.cells()
        for cell in cells:
            if cell.index in failed_cells:
                continue
            reason = cell_unavailable(cell, self.plan)
            if reason:
                failed_cells.add(cell.index)
                self._fail(Slot(cell, -1), f"unavailable: {reason}")
        slots = remaining(order(cells, self.plan.method), done or set(), failed_cells)
        self.observer.started(slots, sum(estimate_seconds(s, self.plan.method) for s in slots))
        for slot in slots:
            est = estimate_seconds(slot, self.plan.method)
            if slot.cell.index in failed_cells:
                self.observer.slot_finished(slot, est)
                continue
            self.observer.slot_started(slot)
            try:
                self._run_slot(slot)
            except _CellFailed:
                failed_cells.add(slot.cell.index)
            except PickfsError as exc:
                failed_cells.add(slot.cell.index)
                self._fail(slot, exc.one_line())
            self.observer.slot_finished(slot, est)
        return failed_cells


class _CellFailed(Exception):
    """A cell failed and its failure is already recorded."""
