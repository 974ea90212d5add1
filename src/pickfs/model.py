"""Typed, frozen data shared by every layer. SI units: seconds, bytes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

TargetKind = Literal["image", "device", "directory"]
# The name under which a run's started-and-reaped processes (its client, cp, tar, fio) are listed in its monitors.
CHILDREN = "the run's own processes (client, tools)"
# "capacity": a slice of the capacity search (engine/capacity.py), at a rate the search chose
# "crash-state": one power-cut state of a crash test, saved as it is checked (kept when the test is interrupted)
# "fault": one cell of `pickfs crashtest --fault` (its document, faults/document.py, as the raw output)
Phase = Literal["prepare", "warmup", "measured", "crash", "crash-state", "capacity", "fault"]
# a result: a capacity search's steps, a crash test's states and a fault test's cells too
RESULT_PHASES: tuple[Phase, ...] = ("measured", "crash", "capacity", "fault")
SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
DEFAULT_MARGIN = 0.05  # the smallest difference worth a recommendation over the safer or default choice, by default


@dataclass(frozen=True)
class FsConfig:
    """One storage configuration: filesystem x mkfs options x mount options x scheduler."""

    name: str
    fstype: str
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()
    scheduler: str | None = None  # None: leave the device's scheduler as it is
    base: str | None = None  # the config this one varies (one-variable-at-a-time check)
    path: str | None = None  # directory target: the existing directory to use
    description: str = ""
    # -- aged filesystems (stack/aging.py): filled to `age` of its space with a file population,
    # part deleted, refilled, `age_rounds` times, from `age_seed`, before the data is laid out
    age: float | None = None
    age_rounds: int = 3
    age_seed: int = 1
    # the workload settings this configuration runs with over the plan's (a search's database dimensions)
    database: tuple[tuple[str, str], ...] = ()

    def settings(self) -> dict[str, Any]:
        return {
            "fstype": self.fstype,
            "mkfs_options": list(self.mkfs_options),
            "mount_options": list(self.mount_options),
            "scheduler": self.scheduler,
            "base": self.base,
            "path": self.path,
            "description": self.description,
            "age": self.age,
            "age_rounds": self.age_rounds,
            "age_seed": self.age_seed,
        } | ({"database": [list(kv) for kv in self.database]} if self.database else {})


@dataclass(frozen=True)
class WorkloadSpec:
    """A workload by registry name, with its settings (sorted key/value pairs)."""

    name: str
    label: str
    settings: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.settings).get(key, default)

    @property
    def fixed_rate(self) -> bool:
        """Run at a fixed rate (open loop): every configuration does the same work, so the race, which decides
        on throughput, does not apply; latency is compared instead."""
        return bool(self.get("rate"))

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "settings": dict(self.settings)}


@dataclass(frozen=True)
class Target:
    kind: TargetKind = "image"
    workdir: str = "/var/tmp/pickfs"
    size_bytes: int = 4 * 1024**3
    device: str | None = None
    confirm: str | None = None
    # -- the production box (stack/cgroups.py, stack/provision.py) --
    size_auto: bool = False  # the image size was not given: sized to the workloads' data
    memory_bytes: int | None = None  # each configuration's server and client in a cgroup of this much memory
    scale: float | None = None  # the workloads' data grown to this multiple of memory_bytes


@dataclass(frozen=True)
class Slices:
    """Side by side, the race and the capacity search: every configuration built at once, measured in short
    slices that take turns in rounds, each round in a fresh random order; `blocks` repetitions on fresh
    filesystems. Workloads that cannot be sliced alternate whole runs in the same rounds."""

    blocks: int | None = None  # None: as many as fit a fifth of the time budget (2 to 6), from the first one's setup
    # rounds (each visits every block). None: at least SIDE_BY_SIDE_MIN_ROUNDS, then until every interval is within
    # target_ci (5%) or the time budget (max_seconds, 9 min) is spent; a number: exactly that many, unless target_ci
    # or max_seconds is given too (then it is the fewest).
    rounds: int | None = None
    slice_seconds: float | None = None  # None: the workload's own default
    freeze_idle: bool = True  # hold servers still (SIGSTOP) outside their own slices
    baseline_copies: int | None = None  # the race: images of the baseline per block (None: about sqrt(k - 1))


@dataclass(frozen=True)
class WholeRuns:
    """One at a time, and whole runs in rounds: each run on its own fresh filesystem."""

    drop_caches: bool = True
    interleave: bool = True


@dataclass(frozen=True)
class CrashTest:
    """A crash test of each cell (pickfs crashtest, or crash_states with a run)."""

    states: int = 0  # > 0: also crash-test each cell, over this many power-cut states
    duration: float = 3.0  # seconds of commits recorded for a crash test
    # > 0: after `states` states, more in batches until this many seconds of checking per cell (its budget)
    time: float = 0.0
    # > 0: with a budget, a cell none of whose states lost anything stops once its distinct states cut at random
    # moments rule out a loss in 1 state of this many or more (its time goes to the cells after it); 0: no goal
    bound: int = 0
    size: int = 512 * 1024**2  # the crash test's image (small: every write is logged)
    size_auto: bool = True  # no size given: at least `size`, larger when the job needs it
    unit: int = 4096  # the disk's atomic unit in a crash test: unflushed writes land in pieces of this size
    recovery: float = 0.25  # share of crash states that lose power again during recovery
    keep: str = ""  # a directory to keep the images of crash states that lost or broke something
    strategies: str = ""  # comma-separated subsets to try (pickfs.crash.states.STRATEGIES); "": all


@dataclass(frozen=True)
class Faults:
    """pickfs crashtest: the disk fails instead of losing power."""

    kinds: str = ""  # pickfs.faults.plan.KINDS, comma-separated; "": none
    at: int = 1  # the k-th matching request once commits flow is the first to fail
    lasts: str = "once"  # once, a count, a duration or forever
    seed: int = 1
    limit: float = 120.0  # seconds each fault cell may run past its commits before it is called hung


@dataclass(frozen=True)
class Method:
    """How a plan is measured: what every way of measuring shares, and each mode's own part (`slices`, `whole`,
    `crash`, `faults`). A plan's [method] table and the flags name every setting by one flat key
    (`METHOD_PARTS`); `method_of` builds a Method from them and `but` changes some."""

    runs: int = 5  # measured runs per cell (side by side, the rounds when rounds is not given)
    warmup: int = 1
    quiesce_seconds: float = 1.0  # the device must stay idle this long before a measured run
    quiesce_timeout: float = 60.0
    monitors: bool = True  # sample /proc during every measured run
    monitor_interval: float = 1.0
    target_ci: float | None = None  # stopping rule: stop a cell once its 95% interval is within +/- this share
    max_runs: int = 20  # with target_ci: the most measured runs per cell
    max_seconds: float | None = None  # with target_ci: stop starting new rounds after this long
    speed: bool = True  # measure speed (pickfs crashtest turns it off)
    # Side by side (the default): all configurations built at once, measured in slices (`slices`); False: one
    # configuration at a time (`whole`).
    side_by_side: bool = True
    seed: int | None = None  # of the rounds' random order (None: from the run id)
    # The race (the default side by side): configurations leave the rotation once their place is decided, the
    # baseline stands in about sqrt(k - 1) images per block, the weather is read from every configuration, and
    # the run stops when the recommendation is settled. False: every configuration to the end, each compared
    # with the baseline's slices around it (the earlier design).
    race: bool = True
    margin: float = DEFAULT_MARGIN  # the smallest difference worth a recommendation over the safer or default choice
    # What moves a configuration's level from one run to the next that no run can see in itself (log scale, a
    # standard deviation): added to every level's variance, so that intervals and decisions hold across reruns.
    # The default is the reference machine's, estimated across stored reruns (benchmarks/rerun_variance.py).
    rerun_sd: float = 0.01
    # A busy machine is the condition to measure: slices where other processes took the CPUs count like any
    # other, and the report says the answer is for a busy machine (False: a disturbed run decides on its quiet
    # slices where they change the answer, and says so).
    accept_busy: bool = False
    # the capacity search (engine/capacity.py): e.g. "p99<=5ms", the highest fixed rate each configuration
    # holds within it; None: no search
    latency_target: str | None = None
    slices: Slices = Slices()
    whole: WholeRuns = WholeRuns()
    crash: CrashTest = CrashTest()
    faults: Faults = Faults()

    def but(self, **flat: Any) -> Method:
        """This method with some settings changed, each named by its flat key (pure)."""
        parts: dict[str, dict[str, Any]] = {}
        own: dict[str, Any] = {}
        for key, value in flat.items():
            where = METHOD_PARTS.get(key)
            if where is None:
                if key not in _COMMON:
                    raise TypeError(f"Method has no setting {key!r}")
                own[key] = value
            else:
                parts.setdefault(where[0], {})[where[1]] = value
        return replace(self, **own, **{p: replace(getattr(self, p), **kw) for p, kw in parts.items()})

    def flat(self) -> dict[str, Any]:
        """Every setting by its flat key, as a plan's [method] table names it (pure)."""
        out = {k: getattr(self, k) for k in _COMMON}
        out.update({key: getattr(getattr(self, part), name) for key, (part, name) in METHOD_PARTS.items()})
        return out


# The flat key of each setting of a mode's part: (the part, its name there). The plan's [method] table, the flags
# and runs stored before the split name them so.
METHOD_PARTS: dict[str, tuple[str, str]] = {
    "blocks": ("slices", "blocks"), "rounds": ("slices", "rounds"), "slice_seconds": ("slices", "slice_seconds"),
    "freeze_idle": ("slices", "freeze_idle"), "baseline_copies": ("slices", "baseline_copies"),
    "drop_caches": ("whole", "drop_caches"), "interleave": ("whole", "interleave"),
    "crash_states": ("crash", "states"), "crash_duration": ("crash", "duration"), "crash_time": ("crash", "time"),
    "crash_bound": ("crash", "bound"),
    "crash_size": ("crash", "size"), "crash_size_auto": ("crash", "size_auto"), "crash_unit": ("crash", "unit"),
    "crash_recovery": ("crash", "recovery"), "crash_keep": ("crash", "keep"),
    "crash_strategies": ("crash", "strategies"),
    "fault": ("faults", "kinds"), "fault_at": ("faults", "at"), "fault_for": ("faults", "lasts"),
    "fault_seed": ("faults", "seed"), "fault_limit": ("faults", "limit"),
}
PART_TYPES: dict[str, type] = {"slices": Slices, "whole": WholeRuns, "crash": CrashTest, "faults": Faults}
_COMMON = tuple(k for k in Method.__dataclass_fields__ if k not in PART_TYPES)


def method_of(**flat: Any) -> Method:
    """A method from settings named by their flat keys, the others at their defaults (pure)."""
    return Method().but(**flat)


@dataclass(frozen=True)
class Plan:
    target: Target
    configs: tuple[FsConfig, ...]
    workloads: tuple[WorkloadSpec, ...]
    method: Method = Method()
    baseline: str | None = None
    warnings: tuple[str, ...] = ()

    def cells(self) -> tuple[Cell, ...]:
        out: list[Cell] = []
        for wl in self.workloads:
            for cfg in self.configs:
                spec = replace(wl, settings=tuple(sorted({**dict(wl.settings), **dict(cfg.database)}.items())))
                out.append(Cell(index=len(out), config=cfg, workload=spec if cfg.database else wl))
        return tuple(out)


@dataclass(frozen=True)
class Cell:
    index: int
    config: FsConfig
    workload: WorkloadSpec

    @property
    def key(self) -> str:
        return f"{self.config.name}/{self.workload.label}"


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    higher_is_better: bool
    description: str = ""


@dataclass(frozen=True)
class MountInfo:
    """What was really built: requested versus in force, read back from the kernel."""

    device: str | None
    mountpoint: str
    fstype: str
    requested_options: tuple[str, ...]
    effective_options: tuple[str, ...]
    scheduler_requested: str | None
    scheduler_effective: str | None
    space_used_bytes: int | None
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "mountpoint": self.mountpoint,
            "fstype": self.fstype,
            "requested_options": list(self.requested_options),
            "effective_options": list(self.effective_options),
            "scheduler_requested": self.scheduler_requested,
            "scheduler_effective": self.scheduler_effective,
            "space_used_bytes": self.space_used_bytes,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class RawOutput:
    """A workload's output kept verbatim, and how long the run took."""

    text: str
    elapsed_s: float


@dataclass(frozen=True, kw_only=True)
class Trial:
    """One execution of a workload in a cell: a warm-up or a measured run (built with keywords)."""

    run_id: str
    cell_index: int
    repetition: int
    phase: Phase
    started: float
    elapsed_s: float
    ok: bool
    metrics: dict[str, float] = field(default_factory=dict)
    raw_output: str = ""
    mount: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    error: str = ""
    monitor: dict[str, Any] = field(default_factory=dict)
    # Side by side: the block (filesystems made afresh for each) and the round the trial ran in;
    # round None: not part of a round (the one-at-a-time method, and runs stored before rounds).
    block: int = 0
    round: int | None = None


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sanitized_mean: float
    median: float
    stdev: float
    cv: float
    ci_low: float
    ci_high: float
    minimum: float
    maximum: float


# Why a race stopped: its decision was settled; it could not settle within its budget at the rate it went; its
# budget was spent; it had all its rounds (fixed, or the most); every configuration left in it failed.
StopReason = Literal["settled", "cannot settle", "budget", "rounds", "failed"]
STOP_REASONS: tuple[StopReason, ...] = ("settled", "cannot settle", "budget", "rounds", "failed")


@dataclass(frozen=True)
class RaceRound:
    """A round of a race as the race acted on it (engine/race.py), recorded with the run: the workload's label, the
    round of its slices, the decision taken on every slice up to it (stats/decision.py's `Decision` as plain data,
    analysis/race.py `decision_record`; None when the race took none after it) and why it stopped there (None:
    it went on)."""

    label: str
    round: int
    decision: dict[str, Any] | None
    stop: StopReason | None = None


@dataclass(frozen=True)
class RunRecord:
    id: str
    created: float
    updated: float
    status: str
    pickfs_version: str
    plan: dict[str, Any]
    host: dict[str, Any]
    notes: tuple[str, ...]
    trials: tuple[Trial, ...]
    race_rounds: tuple[RaceRound, ...] = ()  # the decision trail of every race of the run, in the order taken



# -- serialisation (stored with every run, so `--resume` and `report` rebuild the plan) -------------
def plan_to_dict(plan: Plan) -> dict[str, Any]:
    return {
        "target": asdict(plan.target),
        "configs": [{"name": c.name, **c.settings()} for c in plan.configs],
        "workloads": [w.as_dict() for w in plan.workloads],
        "method": asdict(plan.method),  # each mode's part nested
        "baseline": plan.baseline,
        "warnings": list(plan.warnings),
    }


def plan_from_dict(d: dict[str, Any]) -> Plan:
    configs = tuple(
        FsConfig(name=c["name"], fstype=c["fstype"], mkfs_options=tuple(c["mkfs_options"]),
                 mount_options=tuple(c["mount_options"]), scheduler=c["scheduler"], base=c["base"],
                 path=c["path"], description=c["description"], age=c.get("age"),
                 age_rounds=c.get("age_rounds", 3), age_seed=c.get("age_seed", 1),
                 database=tuple((str(k), str(v)) for k, v in c.get("database", ())))
        for c in d["configs"]
    )
    workloads = tuple(WorkloadSpec(w["name"], w["label"], tuple(sorted(w["settings"].items())))
                      for w in d["workloads"])
    return Plan(Target(**d["target"]), configs, workloads, method_from_dict(d["method"]), d.get("baseline"),
                tuple(d.get("warnings", ())))


def method_from_dict(d: dict[str, Any]) -> Method:
    """A stored method: each mode's part nested, or (a run stored before the split) every setting flat."""
    method = dict(d)
    method.setdefault("side_by_side", False)  # runs stored before the side-by-side method
    method.setdefault("race", False)  # runs stored before the race
    parts = {p: cls(**method.pop(p)) for p, cls in PART_TYPES.items() if isinstance(method.get(p), dict)}
    return replace(method_of(**method), **parts)
