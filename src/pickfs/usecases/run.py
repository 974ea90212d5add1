"""Run a plan: one typed request, one typed outcome. No printing, no click, no exit: what it has to say goes to
its `RunEvents`, what it found comes back as a `RunOutcome` for the caller to render.

    outcome = run_plan(RunRequest(plan=plan, workdir="/var/tmp/pickfs"), Silent())

`pickfs run`, `pickfs crashtest`, `pickfs plan check` (a dry run) and a fleet host's job all come through here,
so the ledger, the orphan cleanup, the run lock, the interrupt and the resume behave the same for each."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pickfs import __version__, host
from pickfs.engine import runlock
from pickfs.engine.choice import method_words as how_measured_words
from pickfs.engine.executor import Executor, Observer
from pickfs.engine.schedule import Slot
from pickfs.errors import PickfsError, PlanError
from pickfs.model import RESULT_PHASES, Plan, Target, Trial, plan_from_dict, plan_to_dict
from pickfs.plan import check_stored_plan
from pickfs.risks import config_risks, risks_of
from pickfs.stack.ledger import Ledger
from pickfs.stack.safety import check_device
from pickfs.stack.signals import interrupted
from pickfs.stack.targets import target_kind
from pickfs.store import ResultStore, RunRecord
from pickfs.store.results import new_run_id
from pickfs.usecases.preview import Preview, nothing_can_run, preview_plan, unavailable_cells
from pickfs.usecases.workspace import clean_orphans, ledger_for, open_store, require_root
from pickfs.workloads import REGISTRY
from pickfs.workloads.command import Command

Status = Literal["complete", "failed", "interrupted", "dry run"]


@dataclass(frozen=True)
class RunRequest:
    """What running a plan takes: a new plan or the id of a stored run to continue, and where results go.

    `workdir` is where the results database lives unless `results` names one (a file, or a
    postgresql:// URL; else $PICKFS_RESULTS, else WORKDIR/results.db); the plan's own target says where
    images, mounts and the ledger go. `dry_run`: check the plan against this machine and estimate its time,
    creating nothing."""

    plan: Plan | None = None
    resume: str | None = None
    workdir: str = Target().workdir
    results: str | None = None
    dry_run: bool = False

    def __post_init__(self) -> None:
        if self.dry_run and self.resume:
            raise PlanError("--dry-run checks a new plan; a resumed run's plan was checked when it started",
                            "drop --dry-run, or look at the saved run with: pickfs report RUN")
        if (self.plan is None) == (self.resume is None):
            raise PlanError("a run needs a plan or the id of a run to resume, not both",
                            "give a plan, or --resume RUN alone")


@dataclass(frozen=True)
class RunOutcome:
    """How the run ended. `record` is the stored run to render (complete or failed); None when it was
    interrupted (what it measured is kept in the store, to resume) and for a dry run, whose findings are
    `preview`."""

    status: Status
    run_id: str | None = None
    results: str = ""  # where the run is saved, as its store names itself
    record: RunRecord | None = None
    preview: Preview | None = None

    def error(self) -> PickfsError | None:
        """A run in which no configuration gave a result is an error (after its record is shown)."""
        if self.status != "failed":
            return None
        return PickfsError(f"run {self.run_id} failed: no configuration gave a result (each one's error is above)",
                           "fix what the errors name, then run again")


class RunEvents(Protocol):
    """What a run has to say while it runs: warnings and lines of its progress, and the engine's observer
    (engine/executor.py) for the measurement itself, given for as long as it lasts."""

    def warn(self, text: str) -> None: ...
    def info(self, text: str) -> None: ...
    def error(self, text: str) -> None: ...
    def measuring(self) -> AbstractContextManager[Observer]: ...


@dataclass
class Silent:
    """Events for a caller in code: nothing shown, every message kept (warnings, infos, errors, notes)."""

    said: list[tuple[str, str]] = field(default_factory=list)

    def warn(self, text: str) -> None:
        self.said.append(("warning", text))

    def info(self, text: str) -> None:
        self.said.append(("info", text))

    def error(self, text: str) -> None:
        self.said.append(("error", text))

    @contextmanager
    def measuring(self) -> Iterator[Observer]:
        yield _Notes(self.said)


class _Notes:
    """The engine's observer that keeps only its notes."""

    def __init__(self, said: list[tuple[str, str]]) -> None:
        self.said = said

    def started(self, slots: list[Slot], estimate_s: float) -> None: ...
    def slot_started(self, slot: Slot) -> None: ...
    def trial_saved(self, slot: Slot, trial: Trial) -> None: ...
    def slot_finished(self, slot: Slot, estimate_s: float) -> None: ...
    def extend(self, estimate_s: float) -> None: ...
    def rounds_started(self, label: str, budget_s: float, blocks: int | None, configs: int) -> None: ...
    def round_finished(self, label: str, block: int, round_no: int, widest: float | None) -> None: ...

    def note(self, text: str) -> None:
        self.said.append(("note", text))


def run_plan(request: RunRequest, events: RunEvents) -> RunOutcome:
    """Run a plan (or the rest of a resumed one) and return how it ended; a dry run only looks.

    Raises PickfsError for what stops a run before it starts (root, the device, the work directory, a stored
    plan that fails its checks) and for an error that ends it (the run is marked failed first, and
    `events.error` says what was kept). Ctrl-C (KeyboardInterrupt, or SIGTERM made one) does not propagate:
    what was built is undone, the run is marked interrupted and the outcome says so."""
    store: ResultStore | None = None
    previous: tuple[Trial, ...] = ()
    if request.resume is not None:
        store = open_store(request.workdir, request.results)
        record = store.load(request.resume)
        plan = plan_from_dict(record.plan)
        resumable(store, plan)
        run_id: str | None = record.id
        previous = record.trials
    else:
        assert request.plan is not None  # __post_init__: a plan or a resume
        plan, run_id = request.plan, None
    if request.dry_run:
        return RunOutcome("dry run", preview=preview_plan(plan))
    refused = nothing_can_run(plan, unavailable_cells(plan))  # before anything is built, as `plan check` lists it
    if refused is not None:
        raise refused
    if target_kind(plan.target).builds:
        require_root(f"building filesystems on {plan.target.kind} targets (losetup, mkfs, mount)",
                     "run as root (sudo), or compare existing directories with --dir PATH")
    if store is None:
        store = open_store(request.workdir, request.results)
    if target_kind(plan.target).erases:
        check_device(plan.target.device or "", plan.target.confirm)
    ledger = ledger_for(plan.target.workdir)
    Path(plan.target.workdir).mkdir(parents=True, exist_ok=True)
    undo_orphans(ledger, events.warn)
    for w in (*plan.warnings, *(Command.root_warning(spec) for spec in plan.workloads)):
        if w:
            events.warn(w)
    if run_id is not None:
        lock = runlock.hold(Path(plan.target.workdir), run_id)  # refused while another pickfs runs it
        store.set_status(run_id, "running")
    else:
        run_id = store_new_run(store, plan)
        lock = runlock.hold(Path(plan.target.workdir), run_id)
    try:
        return _execute(plan, store, ledger, run_id, previous, events)
    finally:
        runlock.release(lock)


def undo_orphans(ledger: Ledger, warn: Callable[[str], None]) -> None:
    """What an earlier pickfs that did not finish left in the ledger undone before a run makes anything; said."""
    n, problems = clean_orphans(ledger)
    if n:
        warn(f"undid {n} resource(s) left by an earlier pickfs that did not finish")
    for p in problems:
        warn(f"could not undo: {p}")


def _execute(plan: Plan, store: ResultStore, ledger: Ledger, run_id: str, previous: tuple[Trial, ...],
             events: RunEvents) -> RunOutcome:
    """Execute the run; whatever ends it, it ends with a final status and says what was kept."""
    events.info(f"run {run_id}: {len(plan.configs)} configurations x {len(plan.workloads)} workload(s), "
                f"{method_words(plan)}; results in {store.path}")
    measuring = False
    try:
        with events.measuring() as observer:
            measuring = True
            status = execute_run(plan, run_id, store, ledger, observer, previous)
    except BaseException as exc:
        if not measuring:
            raise
        if not interrupted(exc):
            # a full disk, an I/O error, an internal error: the run ends failed, never 'running'
            _end_run(store, run_id, "failed", "failed", events)
            raise
        # Ctrl-C (or SIGTERM) always ends the run as interrupted, even when undoing what was
        # built raised on the way out; that error is reported after.
        if not isinstance(exc, KeyboardInterrupt):
            events.warn(f"while undoing after the interrupt: {one_line(exc)}")
        _end_run(store, run_id, "interrupted", "interrupted", events)
        return RunOutcome("interrupted", run_id, str(store.path))
    return RunOutcome(status, run_id, str(store.path), store.load(run_id))


def execute_run(plan: Plan, run_id: str, store: ResultStore, ledger: Ledger, observer: Observer,
                previous: tuple[Trial, ...] = ()) -> Status:
    """A stored run executed (its run lock held by the caller): 'running' while it runs, then complete, or failed
    when nothing was measured. An error or Ctrl-C marks it failed or interrupted and propagates, for the caller
    to say what was kept (a search goes on to stop, `pickfs run` ends there)."""
    store.set_status(run_id, "running")
    try:
        Executor(plan, run_id, store, ledger, observer).execute(previous)
    except BaseException as exc:
        end_status(store, run_id, "interrupted" if interrupted(exc) else "failed")
        raise
    record = store.load(run_id)
    status: Status = "complete" if any(t.ok and t.phase in RESULT_PHASES for t in record.trials) else "failed"
    store.set_status(run_id, status)
    return status


def end_status(store: ResultStore, run_id: str, status: str) -> None:
    """A run that an error or Ctrl-C ended marked so, best effort: the results file may be what failed, and the
    error that ended the run is the one to see."""
    try:
        store.set_status(run_id, status)
    except (PickfsError, OSError):
        pass


def _end_run(store: ResultStore, run_id: str, status: str, how: str, events: RunEvents) -> None:
    """Best effort (the results file may be what failed): the final status, and what was kept."""
    end_status(store, run_id, status)
    try:
        trials = store.load(run_id).trials
        kept = sum(1 for t in trials if t.phase in RESULT_PHASES and t.ok)
        states = sum(1 for t in trials if t.phase == "crash-state" and t.ok)
        said = f"{kept} measured runs{f' and {states} checked crash states' if states else ''} kept in {store.path}"
    except (PickfsError, OSError):
        said = f"what was saved before is kept in {store.path}"
    events.error(f"run {run_id} {how}: {said}; continue with: pickfs run --resume {run_id}")


def resumable(store: ResultStore, plan: Plan) -> None:
    """A stored plan is run again (as root) only from a results file no other user can write, and only once it
    passes every check a new plan passes."""
    path = getattr(store, "path", None)
    if isinstance(path, Path) and path.is_file():
        st = path.stat()
        if st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022:
            raise PlanError(f"results file {path} can be written by another user than pickfs's: a run resumed from it "
                            "would run whatever plan it holds", "resume only from a results file of your own (0600)")
    if plan.method.faults.kinds:  # its cells are kept, but the power-cut test its plan also holds is not what it ran
        raise PlanError("this run is a fault test (pickfs crashtest --fault), which is not resumed",
                        f"run it again: pickfs crashtest --fault {plan.method.faults.kinds} (what it measured is kept)")
    check_stored_plan(plan)


def method_words(plan: Plan) -> str:
    """How the run measures, in a few words: each way the executor takes (engine/choice.py), and the crash test."""
    m = plan.method
    what = how_measured_words(plan)
    if m.crash.states:
        what += (f"; a crash test of {m.crash.states} power-cut states each, then more within {m.crash.time:g} s"
                 if m.crash.time else f"; a crash test of {m.crash.states} power-cut states each")
    return what


def one_line(exc: BaseException) -> str:
    return exc.one_line() if isinstance(exc, PickfsError) else f"{type(exc).__name__}: {exc}"


def plan_record(plan: Plan) -> dict[str, Any]:
    """The plan as stored with the run, with what its reports need to know and must not look up later:
    each workload's metric definitions, its database and the risks of its settings, and each
    configuration's risks (report/ reads these, and imports no workload, service or risk table)."""
    d = plan_to_dict(plan)
    for w, spec in zip(d["workloads"], plan.workloads, strict=True):
        cls = REGISTRY[w["name"]]
        w["metrics"] = [asdict(m) for m in cls.metrics]
        w["breakdown"] = list(cls.breakdown)
        w["kind"] = cls.kind_for(spec).shown_as  # how the report charts it
        w["database"] = cls.database_for(spec)
        w["risks"] = risks_of(spec, w["database"])
    for c, config in zip(d["configs"], plan.configs, strict=True):
        c["risks"] = config_risks(config)
    return d


def store_new_run(store: ResultStore, plan: Plan) -> str:
    run_id = new_run_id()
    store.create_run(run_id, __version__, plan_record(plan), host.collect(plan.target.workdir))
    return run_id
