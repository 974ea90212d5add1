"""Each stage of a search raced for real: a stored run of the run machinery (engine/executor.py, the race),
recorded in the search's state so that an interrupted search resumes the stage where it stopped.

`start_run` is the one place that calls the run machinery: every stage is an ordinary run in the results
database (`pickfs report RUN` shows it as any other).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pickfs.analysis.answer import finding
from pickfs.analysis.run import build_views
from pickfs.engine import runlock
from pickfs.engine.race import baseline_copies
from pickfs.errors import NoRoom, PlanError
from pickfs.model import Plan, Target, Trial, WorkloadSpec, method_of, plan_from_dict
from pickfs.plan import build_plan
from pickfs.search.driver import AUTO_LEAST, MIN_STAGE_S, StageOutcome, StageSpec
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import HOST_RESERVE_BYTES
from pickfs.store import ResultStore
from pickfs.usecases.run import execute_run, store_new_run
from pickfs.workloads import workload_class


# --- the search's own record: what it was asked, and each stage's run ----------------------------------------
@dataclass
class SearchState:
    id: str
    request: dict[str, Any]  # what the search was asked (space, workload, budget, seed, ...)
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> run_id, elapsed_s, done

    def to_json(self) -> str:
        return json.dumps({"version": 1, "id": self.id, "request": self.request, "stages": self.stages}, indent=1)


def state_path(workdir: str, search_id: str) -> Path:
    return Path(workdir) / "searches" / f"{search_id}.json"


def save_state(workdir: str, state: SearchState) -> None:
    """Atomically, 0600, in a 0700 directory of the work directory."""
    folder = Path(workdir) / "searches"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = state_path(workdir, state.id)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(state.to_json())
    os.replace(tmp, path)


def load_state(workdir: str, search_id: str) -> SearchState:
    """A search's record; refused unless pickfs's user made it and no other user can write it."""
    path = state_path(workdir, search_id)
    if not search_id.replace("-", "").isalnum() or not path.is_file():
        known = sorted(p.stem for p in (Path(workdir) / "searches").glob("*.json"))
        raise PlanError(f"no search {search_id!r} in {Path(workdir) / 'searches'}",
                        f"searches there: {', '.join(known) or 'none'} (or pass the --workdir it ran in)")
    st = path.stat()
    if st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022:
        raise PlanError(f"search record {path} can be written by another user than pickfs's",
                        "resume only a search of your own (0600)")
    try:
        d = json.loads(path.read_text())
        return SearchState(str(d["id"]), dict(d["request"]), dict(d["stages"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise PlanError(f"search record {path} is not readable: {exc}", "start a new search") from None


def search_of_run(workdir: str, run_id: str) -> str | None:
    """The search whose stage `run_id` is, by the search records of the work directory (None: a run of its own, or
    a record pickfs cannot trust); `pickfs search --resume` continues it, not `pickfs run --resume`."""
    for path in sorted((Path(workdir) / "searches").glob("*.json")):
        try:
            state = load_state(workdir, path.stem)
        except (PlanError, OSError):
            continue
        if any(isinstance(stage, dict) and stage.get("run_id") == run_id for stage in state.stages.values()):
            return state.id
    return None


# --- the room for every image standing at once -----------------------------------------------------------
def blocks_that_fit(avail_bytes: int, image_bytes: int, configs: int, copies: int, wanted: int) -> int:
    """How many blocks of `configs` images (the baseline in `copies`) the host can hold at once, each image
    growing to `image_bytes`, at most `wanted` (pure; 0 when not even one)."""
    per_block = (configs - 1 + copies) * image_bytes
    if per_block <= 0:
        return wanted
    return max(0, min(wanted, (avail_bytes - HOST_RESERVE_BYTES) // per_block))


def room_for(plan: Plan, avail_bytes: int, blocks: int | None) -> tuple[int | None, str]:
    """The blocks the stage may stand up and a note when the host limits them; NoRoom when not one block fits."""
    spec = plan.workloads[0]
    grows = workload_class(spec.name).image_growth(spec, plan.target.size_bytes)
    n = len(plan.configs)
    copies = baseline_copies(n - 1)
    # automatic blocks: at least AUTO_LEAST; each further image is checked as it is made, and the race goes
    # on with the images standing when one finds no room
    wanted = blocks if blocks is not None else AUTO_LEAST
    fit = blocks_that_fit(avail_bytes, grows, n, copies, wanted)
    mib = 1024**2
    if fit == 0:
        raise NoRoom(f"the host has {avail_bytes // mib} MiB free; one block of {n} images standing at once "
                     f"(each may grow to {grows // mib} MiB) needs {((n - 1 + copies) * grows + HOST_RESERVE_BYTES) // mib} MiB",
                     "free space on the host, choose a --workdir elsewhere, or search fewer filesystems")
    if fit < wanted:
        return fit, f"room on the host for {fit} block(s) of {n} images standing at once, not {wanted}"
    return blocks, ""


# --- one stage -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """What every stage shares: where, what workload, the method's common settings."""

    workdir: str
    spec: WorkloadSpec
    margin: float
    seed: int
    size_bytes: int | None = None
    slice_s: float | None = None


class Stages:
    """The real racer: each stage a stored run, raced by the engine; resumed from the search's record."""

    def __init__(self, setting: Setting, store: ResultStore, ledger: Ledger, observer: Any, state: SearchState,
                 note: Callable[[str], None]) -> None:
        self.setting = setting
        self.store = store
        self.ledger = ledger
        self.observer = observer
        self.state = state
        self.note = note
        self.warned: set[str] = set()  # the plans' warnings, said once a search

    def plan(self, spec: StageSpec) -> Plan:
        s = self.setting
        target = Target(kind="image", workdir=s.workdir, size_bytes=s.size_bytes or Target().size_bytes,
                        size_auto=s.size_bytes is None)
        method = method_of(blocks=spec.blocks, max_seconds=max(spec.budget_s, MIN_STAGE_S), margin=s.margin,
                           seed=s.seed, slice_seconds=s.slice_s)
        plan = build_plan(target, list(spec.configs), [s.spec], method, spec.baseline)
        if spec.cut:
            self.note(f"{spec.name}: {spec.cut}")
        for warning in plan.warnings:
            if warning not in self.warned:
                self.warned.add(warning)
                self.note(warning)
        st = os.statvfs(s.workdir)
        blocks, why = room_for(plan, st.f_bavail * st.f_frsize, spec.blocks)
        if why:
            self.note(f"{spec.name}: {why}")
            plan = replace(plan, method=plan.method.but(blocks=blocks))
        return plan

    def __call__(self, spec: StageSpec) -> StageOutcome:
        entry = self.state.stages.get(spec.name)
        if entry is not None and entry.get("done"):
            return self.outcome(spec, entry["run_id"], float(entry["elapsed_s"]))
        if entry is None:
            plan = self.plan(spec)
            run_id = self.start_run(plan)
            entry = {"run_id": run_id, "elapsed_s": 0.0, "done": False}
            self.state.stages[spec.name] = entry
            save_state(self.setting.workdir, self.state)
            previous: tuple[Trial, ...] = ()
        else:
            record = self.store.load(entry["run_id"])
            plan, previous = plan_from_dict(record.plan), record.trials
        t0 = time.monotonic()
        try:
            self.race(plan, entry["run_id"], previous)
            entry["done"] = True
        finally:
            entry["elapsed_s"] = float(entry["elapsed_s"]) + time.monotonic() - t0
            save_state(self.setting.workdir, self.state)
        return self.outcome(spec, entry["run_id"], float(entry["elapsed_s"]))

    def start_run(self, plan: Plan) -> str:
        """A new stored run of `plan`, recorded as `pickfs run` records it."""
        return store_new_run(self.store, plan)

    def race(self, plan: Plan, run_id: str, previous: tuple[Trial, ...]) -> None:
        """The run machinery on one stage's plan: the run ends complete, failed or interrupted, never running."""
        lock = runlock.hold(Path(plan.target.workdir), run_id)
        try:
            execute_run(plan, run_id, self.store, self.ledger, self.observer, previous)
        finally:
            runlock.release(lock)

    def outcome(self, spec: StageSpec, run_id: str, elapsed_s: float) -> StageOutcome:
        record = self.store.load(run_id)
        plan = plan_from_dict(record.plan)
        images = len({(t.cell_index, t.block) for t in record.trials if t.ok})
        stored = replace(spec, configs=plan.configs)
        image_s = standup_per_image(record.trials)
        for view in build_views(record):
            if view.race is not None:
                found = finding(view)
                return StageOutcome(stored, run_id, view.race.fit, view.race.decision, view.race.left, elapsed_s,
                                    images, image_s, found.preferred if found is not None else None)
        return StageOutcome(stored, run_id, None, None, (), elapsed_s, images, image_s)


def standup_per_image(trials: Sequence[Trial]) -> float | None:
    """What standing up one image took (pure): the median time from one image's data being laid out to the
    next one's, so the image's mkfs, mount, server start and warm-up count, and the rounds between blocks
    (few gaps) do not."""
    starts = sorted(t.started for t in trials if t.phase == "prepare" and t.ok)
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    return statistics.median(gaps) if gaps else None
