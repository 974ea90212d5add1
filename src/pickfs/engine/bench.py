"""What every way of measuring works with: the run's plan, store, ledger and observer (a `Bench`), the one path a
failure takes (`Bench.failing`), and the one primitive that measures a standing configuration once and saves the
Trial (`Bench.measure_once`). The ways themselves (engine/wholeruns.py, engine/sidebyside.py, engine/race.py,
engine/capacity.py) each implement `WayOfMeasuring`; engine/choice.py holds them in one registry."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pickfs.engine.schedule import Slot, SlotKey, estimate_seconds, measured_estimates, slot_key
from pickfs.errors import PickfsError, ResultsWriteFailed
from pickfs.model import Cell, Method, Phase, Plan, Trial, WorkloadSpec
from pickfs.monitors.sampler import RunMonitor
from pickfs.services.base import Endpoint
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import Provisioned, space_used
from pickfs.stack.signals import interrupted
from pickfs.store import ResultStore
from pickfs.workloads.base import Workload


class Observer(Protocol):
    def started(self, slots: list[Slot], estimate_s: float) -> None: ...
    def slot_started(self, slot: Slot) -> None: ...
    def trial_saved(self, slot: Slot, trial: Trial) -> None: ...
    def slot_finished(self, slot: Slot, estimate_s: float) -> None: ...
    def extend(self, estimate_s: float) -> None: ...
    def note(self, text: str) -> None: ...
    def rounds_started(self, label: str, budget_s: float, blocks: int | None, configs: int) -> None: ...
    def round_finished(self, label: str, block: int, round_no: int, widest: float | None) -> None: ...


class MeasureFailed(Exception):
    """A measurement ran but its output could not be read; the output is kept with the failure."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


def why_failed(exc: BaseException) -> str:
    if isinstance(exc, PickfsError):
        return exc.one_line()
    return str(exc)


@dataclass(frozen=True)
class Once:
    """One measurement of a standing configuration: what it runs and how it is saved.

    `inside` is entered around the run, inside its timing (a memory group joined); `after` runs
    just after the workload inside the timing (a slice's syncfs, returning its seconds); `figures`, given what
    `after` returned, adds figures to the parsed ones; `notes` are kept with the trial."""

    spec: WorkloadSpec
    phase: Phase
    repetition: int = 0
    block: int = 0
    round: int | None = None
    monitor: RunMonitor | None = None
    inside: Callable[[], AbstractContextManager[Any]] = nullcontext
    after: Callable[[], float] | None = None
    figures: Callable[[float], dict[str, float]] | None = None
    notes: tuple[str, ...] = ()
    wall_clock: bool = False  # the trial's time is the wall clock around run and `after` (a slice), not the run's own


class Standing(Protocol):
    """A configuration standing for a workload: its filesystem, server and workload (engine/standup.py's
    `Standing`, a side-by-side `Member`)."""

    @property
    def prov(self) -> Provisioned: ...
    @property
    def endpoint(self) -> Endpoint | None: ...
    @property
    def workload(self) -> Workload: ...
    @property
    def mount(self) -> dict[str, Any]: ...


@dataclass
class Bench:
    """The run every way of measuring works in: the plan (with the way's own method), where trials go, the ledger
    and the observer; and the times measured so far, from which the remaining time is estimated."""

    plan: Plan
    run_id: str
    store: ResultStore
    ledger: Ledger
    observer: Observer
    # estimates from measurements: what whole-run slots took, per workload and filesystem, from recent stored runs
    # and then from this run's own slots as they finish (shared by every way of one run)
    walls: dict[SlotKey, list[float]] = field(default_factory=dict)
    measured: dict[Any, float] = field(default_factory=dict)

    def with_method(self, method: Method) -> Bench:
        """The same run for a way measuring with its own method (its share of the budget); the estimates shared."""
        return replace(self, plan=replace(self.plan, method=method))

    # -- the one failure path ---------------------------------------------------------------------------------
    def fail(self, cell: Cell, message: str, raw: str = "", block: int = 0, repetition: int = 0) -> None:
        """A failed trial of `cell` saved, and said."""
        self.store.save_trial(Trial(run_id=self.run_id, cell_index=cell.index, repetition=repetition,
                                    phase="measured", started=time.time(), elapsed_s=0.0,
                                    ok=False, raw_output=raw, error=message, block=block))
        self.observer.note(f"{cell.key}: {message}")

    @contextmanager
    def failing(self, cell: Cell, failed: set[int], block: int = 0, repetition: int = 0) -> Iterator[None]:
        """What fails inside marks `cell` failed and records why, and the way goes on with the others; a results
        file that can no longer be written, and Ctrl-C (also when a teardown failed on its way out), end the run."""
        try:
            yield
        except ResultsWriteFailed:
            raise  # nothing more can be kept: stop the run
        except (PickfsError, MeasureFailed, OSError) as exc:
            if interrupted(exc):
                raise
            failed.add(cell.index)
            self.fail(cell, why_failed(exc), getattr(exc, "raw", ""), block=block, repetition=repetition)

    # -- the one measure-once primitive -----------------------------------------------------------------------
    def measure_once(self, cell: Cell, on: Standing, once: Once) -> Trial:
        """Run the workload once on a standing configuration, under its monitor, parse it and save the Trial at
        once. MeasureFailed when its output is not the workload's (the output is kept with the failure)."""
        prov = on.prov
        started = time.time()
        after_s = 0.0
        with once.monitor or nullcontext(), once.inside():
            raw = on.workload.run(once.spec, prov.datadir, on.endpoint)
            if once.after is not None:
                after_s = once.after()
        elapsed = time.time() - started if once.wall_clock else raw.elapsed_s
        try:
            metrics = on.workload.parse(raw.text)
        except (ValueError, KeyError) as exc:
            raise MeasureFailed(f"could not parse {cell.workload.name} output: {exc}", raw.text) from None
        if once.figures is not None:
            metrics.update(once.figures(after_s))
        observed = once.monitor.result() if once.monitor else {}
        if observed and prov.info.mountpoint:
            observed["totals"]["space_used_bytes"] = space_used(prov.info.mountpoint)
        trial = Trial(run_id=self.run_id, cell_index=cell.index, repetition=once.repetition, phase=once.phase,
                      started=started, elapsed_s=elapsed, ok=True, metrics=metrics, raw_output=raw.text,
                      mount=on.mount, notes=(*prov.info.notes, *once.notes, *on.workload.notes_from(raw.text)),
                      monitor=observed, block=once.block, round=once.round)
        self.store.save_trial(trial)
        return trial

    # -- time estimates ---------------------------------------------------------------------------------------
    def estimate(self, slot: Slot) -> float:
        return estimate_seconds(slot, self.plan.method, measured=self.measured)

    def learn(self, slot: Slot, wall_s: float, remaining: Sequence[Slot]) -> None:
        """A slot's wall time learnt; the time left said again from it."""
        key = slot_key(slot.cell, self.plan.method)
        self.walls.setdefault(key, []).append(wall_s)
        self.measured[key] = measured_estimates(self.walls)[key]
        reestimate = getattr(self.observer, "reestimate", None)
        if reestimate is not None:
            reestimate(sum(self.estimate(s) for s in remaining))


class WayOfMeasuring(Protocol):
    """One way of measuring a workload's configurations. engine/choice.py's `WAYS` lists them in order of
    precedence: a workload is measured by the first that `fits` it."""

    @property
    def name(self) -> str:
        """What the dry run, the estimate and the run's first line call it."""
        ...

    @property
    def sliced(self) -> bool:
        """Every configuration standing at once, measured in slices (else whole runs, each on a fresh
        filesystem): the estimate counts its budget, not its runs."""
        ...

    @property
    def whole_plan(self) -> bool:
        """It measures the cells of every workload it fits together, in one go (one at a time)."""
        ...

    def fits(self, plan: Plan, spec: WorkloadSpec) -> bool:
        """Does this way measure `spec` in `plan`? (pure but for the registries)"""
        ...

    def method_for(self, plan: Plan, spec: WorkloadSpec, share: float) -> Method:
        """The method it measures `spec` with, given the workload's `share` of the time budget (pure)."""
        ...

    def until(self, m: Method) -> str:
        """What it measures until, after the fewest runs or rounds, as its dry run and the time estimate say it
        (pure)."""
        ...

    def describe(self, m: Method) -> list[str]:
        """How it measures, for the dry run: a first line, then indented details (pure)."""
        ...

    def words(self, m: Method) -> str:
        """How it measures, in a few words, for the run's first line (pure)."""
        ...

    def measure(self, bench: Bench, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        """Measure `cells`, saving every trial as it ends; `previous`: what a resumed run kept; `failed` gains
        the cells that fail (each one's failure recorded through `bench.failing`)."""
        ...
