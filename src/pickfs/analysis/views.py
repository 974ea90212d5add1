"""From a stored run to what every renderer shows (pure)."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pickfs.analysis.crash_verdict import clean_verdict, rate_verdict, unexercised_verdict
from pickfs.analysis.explain import explain, monitor_summary
from pickfs.analysis.latency import FixedRate, LatencyChoice, fixed_rate, latency_choice
from pickfs.analysis.race import Entrant, Roles, decision_from_record, judge, race_roles, race_target
from pickfs.fsfacts import has_filesystem, in_memory, is_reference
from pickfs.model import (
    Cell,
    Method,
    MetricDef,
    Plan,
    RaceRound,
    RunRecord,
    Summary,
    Trial,
    WorkloadSpec,
    plan_from_dict,
)
from pickfs.stats import relative, summarize
from pickfs.stats.anomalies import outliers
from pickfs.stats.compare import Comparison, compare, compare_all
from pickfs.stats.decision import ALPHA, RACE_ALPHA, Decision, against_baseline, beyond_run, contrast
from pickfs.stats.paired import (
    Obs,
    PairedComparison,
    paired_compare,
    paired_compare_all,
    primary_value,
    resolution,
)
from pickfs.stats.stopping import relative_half_width
from pickfs.stats.summary import drift, trend
from pickfs.stats.weather import Fit

NOISY_CV = 0.10  # a coefficient of variation above this is flagged
DRIFT_NOTE = 0.10  # first-to-last change above this is flagged when the runs also trend
TREND_P = 0.05


@dataclass(frozen=True)
class MetricValues:
    metric: MetricDef
    values: tuple[float, ...]
    summary: Summary | None


@dataclass(frozen=True)
class CrashView:
    """A cell's crash test: counts over the power-cut states tried, or why it could not run."""

    metrics: dict[str, float]
    states: tuple[dict[str, Any], ...] = ()
    model: str = ""
    error: str = ""
    # crash-fidelity work: what no simulation can show, and per setting why this model could not exercise its risk
    unseen: str = ""
    gaps: tuple[str, ...] = ()
    unit: int | None = None  # None: a run from before units (whole requests kept or lost)
    backend: str = ""
    notes: tuple[str, ...] = ()  # what else happened (processes a command left running, ended)

    @property
    def tried(self) -> int:
        return int(self.metrics.get("crash_states", 0))

    @property
    def lost_any(self) -> bool:
        m = self.metrics
        return any(m.get(k, 0) > 0 for k in ("crash_states_lost", "crash_db_failed", "crash_inconsistent",
                                              "crash_unmountable"))

    def short(self) -> str:
        """The verdict in a few words, for a table cell."""
        if self.error or not self.lost_any:
            return self.verdict()
        return "lost acknowledged commits" if self.metrics.get("crash_states_lost") else "did not recover cleanly"

    def verdict(self) -> str:
        """What the states showed; when none lost anything, what that sample rules out (crash_verdict), never
        'safe'."""
        if self.error:
            return self.error
        m = self.metrics
        if not self.lost_any and self.gaps:
            return unexercised_verdict(m, self.gaps)
        if not self.lost_any:
            return clean_verdict(m)
        parts = []
        if m.get("crash_states_lost"):
            parts.append(f"lost acknowledged commits in {int(m['crash_states_lost'])} of {self.tried} states "
                         f"(at most {int(m['crash_max_lost']):,}, {m['crash_max_lost_s']:.2f} s of work)")
        inconsistent = "your check failed" if self.backend == "command" else "database inconsistent"
        for key, what in (("crash_unmountable", "would not mount"), ("crash_db_failed", "database would not open"),
                          ("crash_inconsistent", inconsistent)):
            if m.get(key):
                parts.append(f"{what} in {int(m[key])}")
        rate = rate_verdict(m)
        return "; ".join(parts) + (f": {rate}" if rate else "")


def _crash(trials: list[Trial], cell: Cell | None = None) -> CrashView | None:
    crash = [t for t in trials if t.phase == "crash"]
    ok = [t for t in crash if t.ok]
    if ok:
        t = ok[-1]
        try:
            doc = json.loads(t.raw_output)
        except ValueError:
            doc = {}
        states = tuple(doc.get("states", ()))
        unit = doc.get("unit")  # absent: stored before the model tore writes
        torn = sum(1 for s in states if s.get("torn")) if states else None
        gaps = _crash_gaps(doc, cell, unit, torn)
        return CrashView(dict(t.metrics), states, doc.get("model", ""), unseen=doc.get("unseen", ""), gaps=gaps,
                         unit=unit, backend=doc.get("backend", ""), notes=tuple(t.notes))
    if crash:
        return CrashView({}, error=crash[-1].error)
    return None


@dataclass(frozen=True)
class Row:
    cell: Cell
    status: str  # ok | failed | unavailable | no data
    primary: MetricValues
    others: tuple[MetricValues, ...]
    relative: float | None
    risks: tuple[str, ...]
    notes: tuple[str, ...]
    comparison: Comparison | None = None
    explanation: tuple[str, ...] = ()
    monitors: dict[str, Any] = field(default_factory=dict)
    space: dict[str, float] = field(default_factory=dict)  # bytes used: after mkfs, with the data in place
    crash: CrashView | None = None
    how: str = ""  # SIDE_BY_SIDE, WHOLE_RUNS or ONE_AT_A_TIME ("" when nothing was measured)
    method: str = ""  # the same in a few words, with the counts
    observations: tuple[Obs, ...] = ()  # the primary figure per slice or run in a round, with block and time
    slice_s: float | None = None  # side by side: the slice length
    neighbour_writes: tuple[float, ...] = ()  # side by side: bytes the idle configurations wrote during each slice
    config_risks: tuple[str, ...] = ()  # of `risks`, those of the configuration's own settings (not the workload's)

    @property
    def crash_lost(self) -> bool:
        """Did a crash test find acknowledged commits lost (or a state the database could not recover)?"""
        return self.crash is not None and self.crash.lost_any

    @property
    def unsafe(self) -> bool:
        return bool(self.risks) or self.crash_lost

    @property
    def crash_clean(self) -> bool:
        """A crash test that lost nothing and could exercise every setting's risk."""
        c = self.crash
        return c is not None and not c.error and not c.lost_any and not c.gaps

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(short_flag(r) for r in self.risks)

    def metric(self, name: str) -> MetricValues | None:
        for mv in (self.primary, *self.others):
            if mv.metric.name == name:
                return mv
        return None


# How a workload's kind is shown and charted (the words workloads/kinds.py declares as SHOWN_AS): a database
# that commits (a safety chart), a file tree (phases, the device's view), or other I/O.
DATABASE, FILE_TREE, OTHER = "database", "file tree", "other"


def workload_kind(record: RunRecord, spec: WorkloadSpec) -> str:
    """How the workload's declared kind is charted, as recorded with the run; runs stored before that: judged now."""
    recorded = _workload_entry(record, spec.label).get("kind")
    if recorded in (DATABASE, FILE_TREE, OTHER):
        return str(recorded)
    from pickfs.workloads import REGISTRY  # deferred: a run stored before workload kinds were recorded

    cls = REGISTRY.get(spec.name)
    return cls.kind_for(spec).shown_as if cls is not None else OTHER


@dataclass(frozen=True)
class RaceView:
    """What the race decided and how it got there (recomputed from the slices, never stored)."""

    decision: Decision
    fit: Fit  # levels on the speed scale (1/time where lower is better)
    minutes: float  # the comparison's wall time, stand-up included
    rounds: int
    left: tuple[tuple[str, int, str], ...]  # (configuration, the last round it ran, why it left)
    baseline_images: tuple[float, ...]  # each baseline image's level against their mean (ratios)
    outlying_images: tuple[tuple[str, int, float], ...]  # configuration, image, ratio to its other images
    outlying_slices: int
    images_seen: bool  # the spread from one mkfs to the next is in the intervals
    quiet: bool = False  # decided on a disturbed run's quiet slices alone (analysis/run.py): its minutes count those


@dataclass(frozen=True)
class Choice:
    """The judgement of a run measured before the race (analysis/whole.py): the leaders (safe, none
    significantly faster), the one recommended, and why ('' when it leads alone)."""

    leaders: tuple[Row, ...]
    chosen: Row
    why: str


@dataclass(frozen=True)
class WorkloadView:
    label: str
    name: str
    settings: dict[str, Any]
    baseline: str | None
    rows: tuple[Row, ...]
    breakdown: tuple[MetricDef, ...] = ()  # metrics shown per configuration besides the primary (phases, methods)
    # the smallest difference this run could tell apart: median, lowest and highest interval half-width
    resolution: tuple[float, float, float] | None = None
    kind: str = OTHER  # DATABASE, FILE_TREE or OTHER
    race: RaceView | None = None  # the race's decision, for runs measured by it
    latency: LatencyChoice | None = None  # at a fixed rate: the recommendation by latency (analysis/latency.py)
    choice: Choice | None = None  # neither raced nor at a fixed rate: the judgement of analysis/whole.py
    database: str | None = None  # the database the workload runs, as recorded with the run (None: none, or not recorded)

    @property
    def adjustment(self) -> str:
        """How the intervals against the baseline are adjusted for making many comparisons at once."""
        return "simultaneous 95%" if self.race is not None else "Holm"

    @property
    def commits(self) -> bool:
        """Does the workload acknowledge commits (so a safety chart means something)?"""
        return self.kind == DATABASE

    @property
    def measured(self) -> bool:
        """Was speed measured (or tried)? A crash-test-only run has crash results and nothing else."""
        return any(r.status != "no data" for r in self.rows)


def _metric_defs(record: RunRecord, label: str) -> tuple[MetricDef, ...]:
    return tuple(MetricDef(**m) for m in _workload_entry(record, label).get("metrics", []))


def _workload_entry(record: RunRecord, label: str) -> dict[str, Any]:
    return next((w for w in record.plan["workloads"] if w["label"] == label), {})


def _config_entry(record: RunRecord, name: str) -> dict[str, Any]:
    return next((c for c in record.plan["configs"] if c["name"] == name), {})


def short_flag(risk: str) -> str:
    """The option a risk line is about: the text before its first colon."""
    return risk.split(":", 1)[0]


def _risks(record: RunRecord, cell: Cell) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the cell's settings risk (its configuration's, its workload's), as recorded with the run; runs stored
    before that are judged now."""
    config, workload = _config_entry(record, cell.config.name), _workload_entry(record, cell.workload.label)
    if "risks" in config and "risks" in workload:
        return tuple(config["risks"]), tuple(workload["risks"])
    from pickfs.risks import config_risks, workload_risks  # deferred: a run stored before risks were recorded

    return tuple(config_risks(cell.config)), tuple(workload_risks(cell.workload))


def _crash_gaps(doc: dict[str, Any], cell: Cell | None, unit: int | None, torn: int | None) -> tuple[str, ...]:
    """The settings the crash model could not exercise, as the crash test recorded them (older runs: judged now)."""
    if "not_exercised" in doc:
        return tuple(doc["not_exercised"])
    if cell is None:
        return ()
    from pickfs.risks import crash_model_gaps  # deferred: a crash test stored before it recorded these

    return tuple(crash_model_gaps(cell.workload, unit, torn))


def _space(trials: list[Trial]) -> dict[str, float]:
    """Median space used after mkfs and with the workload's data in place, over the prepared slots."""
    out: dict[str, float] = {}
    for key, name in (("space_mkfs_bytes", "after mkfs"), ("space_prepared_bytes", "data in place"),
                      ("space_size_bytes", "size of the filesystem"),
                      ("space_free_bytes", "free with the data in place")):
        vals = [t.metrics[key] for t in trials if t.phase == "prepare" and t.ok and key in t.metrics]
        if vals:
            out[name] = statistics.median_high(vals)
    peaks = [t.metrics["space_peak_bytes"] for t in trials
             if t.phase == "measured" and t.ok and "space_peak_bytes" in t.metrics]
    if peaks:
        out["peak in the run"] = statistics.median_high(peaks)
    return out


def _row(record: RunRecord, cell: Cell, defs: tuple[MetricDef, ...], method: Method, target: str) -> Row:
    every = [t for t in record.trials if t.cell_index == cell.index]
    trials = [t for t in every if t.phase != "crash"]
    measured = sorted((t for t in trials if t.phase == "measured" and t.ok), key=lambda t: t.started)
    failures = [t.error for t in trials if not t.ok]
    notes = list(dict.fromkeys([*(n for t in trials for n in t.notes), *failures]))
    mvs = _metric_values(measured, defs)
    primary = mvs[0] if mvs else MetricValues(MetricDef("value", "", True), (), None)
    neighbours = [t.metrics["idle_neighbours_wrote_bytes"] for t in measured
                  if "idle_neighbours_wrote_bytes" in t.metrics]
    if neighbours and max(neighbours) > 1024**2:
        notes.append(f"the idle configurations wrote up to {max(neighbours) / 1024**2:.1f} MiB during one of its "
                     "slices: they were not quite idle")
    # Slices take turns with the other configurations and are judged in pairs: their spread over
    # the run is the machine's weather, not the configuration's noise.
    if primary.summary and primary.summary.n > 1 and not t_sliced(measured):
        notes += _whole_run_notes(primary, method)
    own, workload_risks = _risks(record, cell)
    return Row(cell, _status(primary, failures), primary, tuple(mvs[1:]), None, own + workload_risks, tuple(notes),
               explanation=tuple(explain(measured, target)), monitors=monitor_summary(measured), space=_space(trials),
               crash=_crash(every, cell), how=measured_how(measured), method=method_text(measured),
               neighbour_writes=tuple(neighbours),
               slice_s=statistics.median(t.metrics["slice_s"] for t in measured) if t_sliced(measured) else None,
               observations=observations(measured, primary.metric.name), config_risks=own)


def _metric_values(measured: list[Trial], defs: tuple[MetricDef, ...]) -> list[MetricValues]:
    mvs = []
    for i, d in enumerate(defs):
        if i == 0:  # a slice's rate includes the syncfs that ended it
            vals = tuple(v for v in (primary_value(t.metrics, d.name) for t in measured) if v is not None)
        else:
            vals = tuple(t.metrics[d.name] for t in measured if d.name in t.metrics)
        mvs.append(MetricValues(d, vals, summarize(vals) if vals else None))
    return mvs


def _status(primary: MetricValues, failures: list[str]) -> str:
    if primary.values:
        return "ok"
    if any(e.startswith("unavailable") for e in failures):
        return "unavailable"
    return "failed" if failures else "no data"


def _whole_run_notes(primary: MetricValues, method: Method) -> list[str]:
    """Noise, trend, outliers and an unmet target of whole runs taken one after another."""
    assert primary.summary is not None
    notes = []
    if primary.summary.cv > NOISY_CV:
        notes.append(f"noisy (CV {primary.summary.cv:.0%})")
    change = drift(primary.values)
    tau, p = trend(primary.values)
    if abs(change) > DRIFT_NOTE and p < TREND_P:
        direction = "up" if tau > 0 else "down"
        notes.append(f"runs 1-{len(primary.values)} trend {direction} ({change:+.0%} first to last, "
                     f"Kendall p={p:.2f}): not in steady state")
    for i in outliers(primary.values):
        notes.append(f"run {i + 1} is an outlier ({primary.values[i]:,.0f}; median {primary.summary.median:,.0f}): "
                     "was the machine disturbed?")
    if method.target_ci is not None:
        hw = relative_half_width(primary.values)
        if hw > method.target_ci:
            notes.append(f"did not settle: ±{hw:.1%} after {len(primary.values)} runs "
                         f"(target ±{method.target_ci:.1%})")
    return notes


def observations(measured: list[Trial], primary: str) -> tuple[Obs, ...]:
    """The primary figure of every trial measured in a round, with its block, moment and round."""
    out = []
    for t in measured:
        value = primary_value(t.metrics, primary)
        if t.round is not None and value is not None:
            out.append(Obs(t.block, t.started + t.elapsed_s / 2, value, t.round))
    return tuple(out)


def t_sliced(trials: list[Trial]) -> bool:
    return any("slice_s" in t.metrics for t in trials)


SIDE_BY_SIDE, WHOLE_RUNS, ONE_AT_A_TIME = "side by side", "whole runs alternated in rounds", "one at a time"


def measured_how(measured: list[Trial]) -> str:
    """Which method measured these trials."""
    if not measured:
        return ""
    if t_sliced(measured):
        return SIDE_BY_SIDE
    return WHOLE_RUNS if any(t.round is not None for t in measured) else ONE_AT_A_TIME


def method_text(measured: list[Trial]) -> str:
    """How a cell was measured, in a few words."""
    how = measured_how(measured)
    if how == SIDE_BY_SIDE:
        blocks = len({t.block for t in measured})
        slice_s = statistics.median(t.metrics["slice_s"] for t in measured)
        return (f"{how}: {len(measured)} slices of {slice_s:g} s on {blocks} image"
                f"{'s' if blocks != 1 else ''} (fresh mkfs each)")
    return f"{how}: {len(measured)} runs" if how else ""


def workload_views(record: RunRecord, plan: Plan | None = None, fixed: FixedRate | None = None) -> list[WorkloadView]:
    """Every workload of a stored run analysed, but for the judgement of runs measured before the race, which
    analysis/run.py `build_views` adds (`plan` and `fixed`: the record's, when already derived)."""
    plan = plan or plan_from_dict(record.plan)
    fixed = fixed or fixed_rate(record, plan)
    cells = plan.cells()
    views = []
    for wl in plan.workloads:
        defs = _metric_defs(record, wl.label)
        rows = [_row(record, c, defs, plan.method, plan.target.kind) for c in cells if c.workload.label == wl.label]
        # The plan's baseline, or (when it has no figures for this workload, as the raw device has
        # none for a database) the first configuration that has.
        base = next((r for r in rows if r.cell.config.name == plan.baseline and r.primary.summary), None)
        base = base or next((r for r in rows if r.primary.summary), None)
        base_name = base.cell.config.name if base else None
        race = None
        if base is not None:
            raced = race_of(rows, base.cell.config.name, plan.method) if plan.method.race and not wl.fixed_rate \
                else None
            comparisons = raced[0] if raced else comparisons_for(rows, base.cell.config.name)
            race = raced[1] if raced else None
            rows = [replace(r, relative=_relative(r, base, comparisons.get(r.cell.config.name)),
                            comparison=comparisons.get(r.cell.config.name)) for r in rows]
        wanted = _workload_entry(record, wl.label).get("breakdown", [])
        breakdown = tuple(d for d in defs if d.name in wanted
                          and any((mv := r.metric(d.name)) is not None and mv.summary for r in rows))
        comps = {r.cell.config.name: r.comparison for r in rows if r.comparison is not None}
        kind = workload_kind(record, wl)
        latency = latency_choice(fixed, wl.label, *_latency_roles(rows), "acknowledged commits" if kind == DATABASE
                                 else "data written", plan.method.margin) if wl.fixed_rate or plan.method.latency_target else None
        database = _workload_entry(record, wl.label).get("database")
        views.append(WorkloadView(wl.label, wl.name, dict(wl.settings), base_name if base else None, tuple(rows),
                                  breakdown, resolution(comps), kind, race, latency,
                                  database=str(database) if database else None))
    return views


def entrant(row: Row, final: bool = True) -> Entrant:
    """A row as the race's judge sees it: in the final answer with its crash test counted; as the race saw it
    while it ran (`final` false), unsafe only by a setting of its configuration's own, as recorded with the run."""
    fstype = row.cell.config.fstype
    unsafe = row.unsafe if final else bool(row.config_risks)
    return Entrant(row.cell.config, row.cell.index, unsafe, is_reference(fstype), in_memory(fstype),
                   row.crash_clean and final)


def _latency_roles(rows: list[Row]) -> tuple[list[str], list[str]]:
    """(safe candidates most preferred first, the others) for a recommendation by latency at a fixed rate."""
    r = race_roles([entrant(row) for row in rows if has_filesystem(row.cell.config.fstype)], None)
    return list(r.candidates), list(r.others)


def race_rows_series(rows: list[Row], upto: int | None = None) -> dict[str, list[Obs]]:
    """The rows' slices on the speed scale (a time turned into its rate), up to a round."""
    speed = rows[0].primary.metric.higher_is_better

    def as_raced(o: Obs, whole: bool) -> Obs:
        """On the speed scale; a whole run (each on its own fresh filesystem) is an image of its own."""
        o = o if speed else replace(o, value=1 / o.value if o.value > 0 else 0.0)
        return replace(o, block=o.round or 0) if whole else o

    return {r.cell.config.name: [as_raced(o, r.how == WHOLE_RUNS) for o in r.observations
                                 if upto is None or (o.round or 0) <= upto]
            for r in rows if r.observations}


def _judge(rows: list[Row], base: str, method: Method, upto: int | None = None,
           alpha: float = ALPHA, final: bool = True) -> tuple[Fit, Decision] | None:
    """The race's fit and decision on the speed scale: with the roles of the final answer, or (`final` false)
    with those the race had while it ran."""
    roles = race_roles([entrant(r, final) for r in rows if r.observations], base)
    return judge(race_rows_series(rows, upto), roles, method, alpha)


def race_trail(view: WorkloadView, method: Method) -> tuple[tuple[int, Decision], ...]:
    """The decision the race took after each round, as it took it (pure): on the slices up to that round, at
    the race's level, with what it knew while it ran (no crash test yet). The engine's race calls the same judge
    (analysis/race.py) on the same slices: this reproduces what it acted on. () for whole runs, which the
    engine alternates in rounds but does not race."""
    rows = [r for r in view.rows if r.observations]
    if not rows or view.baseline is None or any(r.how != SIDE_BY_SIDE for r in rows):
        return ()
    roles = race_roles([entrant(r, final=False) for r in rows], view.baseline)
    out = []
    for rnd in sorted({o.round or 0 for r in rows for o in r.observations}):
        judged = judge(race_rows_series(rows, rnd), roles, method, RACE_ALPHA)
        if judged is not None:
            out.append((rnd, judged[1]))
    return tuple(out)


def trail_differences(view: WorkloadView, method: Method, recorded: Sequence[RaceRound]) -> list[str]:
    """Where the decision trail a race recorded while it ran (engine/race.py) and the one the analysis reproduces
    from the stored slices (`race_trail`) differ, one line each; [] when they are one (pure). Every decision
    recorded is the analysis's at that round, to the last figure, and the race stopped as settled exactly where
    the analysis is settled."""
    ours = dict(race_trail(view, method))
    out = []
    rounds = [r for r in recorded if r.label == view.label]
    for r in rounds:
        if r.decision is None:
            continue
        mine = ours.get(r.round)
        if mine is None:
            out.append(f"{view.label} round {r.round}: the race decided, the analysis finds too few slices")
        elif mine != decision_from_record(r.decision):
            out.append(f"{view.label} round {r.round}: the race recorded {r.decision}, the analysis decides {mine}")
        settled = mine is not None and mine.done
        if (r.stop == "settled") != settled:
            did = "went on" if r.stop is None else f"stopped ({r.stop})"
            out.append(f"{view.label} round {r.round}: the race {did}, the analysis is "
                       f"{'settled' if settled else 'not settled'}")
    return out


def _x(log_ratio: float) -> str:
    """A log speed ratio as a factor, as every view prints one (report/text.py `factor`, which analysis/ may not
    import: the same rule, two decimals, a third where two would read 1.00)."""
    x = math.exp(log_ratio)
    if x >= 10:
        return f"{x:,.0f}x"
    if x != 1 and f"{x:.2f}" == "1.00":
        return f"{math.floor(x * 1000) / 1000:.3f}x" if x < 1 else f"{math.ceil(x * 1000) / 1000:.3f}x"
    return f"{x:.2f}x"


def beaten_by(fit: Fit, decision: Decision, roles: Roles, name: str, alpha: float) -> tuple[str, float, float] | None:
    """A configuration that is out: the candidate that beats it by the most (its one-sided `alpha` lower bound),
    with the log ratio's estimate and that bound; None when none is left to beat it."""
    rivals = [(c, con) for c in roles.candidates if c != name and c not in dict(decision.out)
              and (con := contrast(fit, c, name)) is not None]
    if not rivals:
        return None
    c, con = max(rivals, key=lambda x: x[1].bound(alpha, upper=False))
    return c, con.est, con.bound(alpha, upper=False)


def standing_why(fit: Fit, decision: Decision, roles: Roles, name: str, target: float, alpha: float) -> str:
    """Why a configuration's place is known, in factors with the bound the decision used at `alpha` (one-sided):
    out (a candidate faster than it by more than the margin), not faster than the answer by more than the margin,
    or (a non-candidate) its factor known within `target` (a half-width). '' while its place is open."""
    margin = decision.margin
    m = f"{margin:.0%}" if abs(margin * 100 - round(margin * 100)) < 1e-9 else f"{margin:.1%}"
    edge = math.log1p(margin)
    if name in dict(decision.out):
        beaten = beaten_by(fit, decision, roles, name, alpha)
        if beaten is None:
            return ""
        c, est, low = beaten
        return f"{c} is faster by more than {m}: {_x(est)}, at least {_x(low)}"
    if name not in dict(decision.decided):
        return ""
    answer = decision.answer
    con = contrast(fit, name, answer) if answer and answer != name else None
    if con is not None and (name in roles.candidates or con.bound(alpha, upper=True) <= edge):
        return f"not faster than {answer} by more than {m}: {_x(con.est)}, at most {_x(con.bound(alpha, upper=True))}"
    ref = roles.baseline if roles.baseline is not None and roles.baseline != name else answer
    con = contrast(fit, name, ref) if ref is not None and ref != name else None
    if con is None:
        return ""
    lo, hi = con.interval(1 - alpha)
    return (f"its factor against {ref} is known within {target:.0%}{beyond_run(con, target, alpha)}: {_x(con.est)} "
            f"[{_x(lo)} to {_x(hi)}]")


RACE_FAMILY = "as the race saw it then: one-sided 99% bounds"  # the label of the race log's figures


def final_roles(view: WorkloadView) -> Roles:
    """The roles of the final answer (the crash tests counted), as the report's decision took them."""
    return race_roles([entrant(r) for r in view.rows if r.observations], view.baseline)


def race_of(rows: list[Row], base: str, method: Method) -> tuple[dict[str, Comparison], RaceView] | None:
    """The race's comparisons against the baseline and its decision, from the rows' slices (pure)."""
    if not any(r.observations for r in rows) or not all(r.observations for r in rows if r.primary.values):
        return None
    judged = _judge(rows, base, method)
    if judged is None:
        return None
    f, decision = judged
    last = {r.cell.config.name: max(o.round or 0 for o in r.observations) for r in rows if r.observations}
    final = max(last.values())
    left = []
    roles_then = race_roles([entrant(r, final=False) for r in rows if r.observations], base)
    for name, rnd in sorted(last.items(), key=lambda kv: kv[1]):
        if rnd < final:
            then = _judge(rows, base, method, upto=rnd, alpha=RACE_ALPHA, final=False)  # as the race decided
            why = standing_why(then[0], then[1], roles_then, name, race_target(method), RACE_ALPHA) if then else ""
            left.append((name, rnd, why))
    levels = f.images_of(base)
    mean = statistics.fmean(levels)
    obs = [o for r in rows for o in r.observations]
    minutes = (max(o.t for o in obs) - min(o.t for o in obs)) / 60
    comps: dict[str, Comparison] = dict(against_baseline(f, base))
    if not rows[0].primary.metric.higher_is_better:  # back to the ratio of times
        comps = {k: replace(c, ratio=1 / c.ratio, ci_low=1 / c.ci_high, ci_high=1 / c.ci_low) for k, c in comps.items()}
    return (comps,
            RaceView(decision, f, minutes, final + 1 - min(o.round or 0 for o in obs), tuple(left),
                     tuple(math.exp(v - mean) for v in levels),
                     tuple((n, b, math.exp(g)) for n, b, g in f.outlying_images), len(f.outlying_slices),
                     f.images_seen))


def _relative(row: Row, base: Row, comparison: Comparison | None) -> float | None:
    """Score against the baseline = 100: the paired ratio where there is one, else the ratio of medians."""
    if row is base:
        return 100.0
    if isinstance(comparison, PairedComparison):
        return 100.0 * comparison.ratio
    if row.primary.summary is None or base.primary.summary is None:
        return None
    return relative(row.primary.summary.median, base.primary.summary.median)


def comparisons_for(rows: list[Row], baseline: str) -> dict[str, Comparison]:
    """Paired in time where the cells were measured in rounds; otherwise the older unpaired test."""
    if all(r.observations for r in rows if r.primary.values):
        return dict(paired_compare_all({r.cell.config.name: r.observations for r in rows if r.observations},
                                       baseline))
    return compare_all({r.cell.config.name: r.primary.values for r in rows if r.primary.values}, baseline)


def pair(view: WorkloadView, a: str, b: str) -> Comparison | None:
    """a against b (not Holm-corrected): paired in time when both were measured in rounds."""
    ra = next((r for r in view.rows if r.cell.config.name == a), None)
    rb = next((r for r in view.rows if r.cell.config.name == b), None)
    if ra is None or rb is None:
        return None
    if ra.observations and rb.observations:
        return paired_compare(ra.observations, rb.observations)
    return compare(ra.primary.values, rb.primary.values)


def summary_dict(s: Summary | None) -> dict[str, float] | None:
    return asdict(s) if s else None


def risk_legend(views: list[WorkloadView]) -> list[str]:
    """Every distinct risk line across the views, in the order first met."""
    seen: list[str] = []
    for v in views:
        for r in v.rows:
            for risk in r.risks:
                if risk not in seen:
                    seen.append(risk)
    return seen
