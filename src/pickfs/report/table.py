"""The one results table every renderer shows (pure): the same columns, under the same names, with the same
cells, in the terminal, Markdown, HTML, CSV and JSON; the notes under it, each once; and the answer.

A renderer decides only how to draw the model: which columns fit (the terminal at 80 columns drops the
`wide` ones first, and shows the `detail` ones only with --explain), never what a column is called or holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pickfs.analysis.answer import Finding, finding, recommended
from pickfs.analysis.margin import margin_words
from pickfs.analysis.views import Row, WorkloadView
from pickfs.model import MetricDef
from pickfs.report.latency import latency_sentences
from pickfs.report.recommend import recommend
from pickfs.report.text import (
    INTERVAL_HEAD,
    direction,
    factor_interval,
    fmt_p,
    fmt_seconds,
    fmt_value,
    interval,
    sanitized,
    speed,
    speed_interval,
    status_detail,
)
from pickfs.stats.summary import log_interval

P99_METRICS = ("lat_p99", "sync_p99", "write_p99")

CONFIGURATION, MEDIAN, VS, VERDICT, MARGIN, P99, COUNT, GEOMEAN, SANITIZED, NOTES = (
    "configuration", "median", "vs_baseline", "verdict", "margin", "p99", "count", "geometric_mean", "sanitized_mean",
    "notes")
# A race's verdict at the margin, per row (the answer's standing of each safe contender against the preferred one)
STANDING_CELL = {"within": "within", "at": "not settled", "out": "out"}


@dataclass(frozen=True)
class Column:
    key: str  # its name in CSV and JSON
    head: str  # its heading in the terminal, Markdown and HTML
    numeric: bool = True
    wide: bool = False  # the terminal shows it only when there is room for it
    detail: bool = False  # the terminal shows it only with --explain; the files always


ROUTINE_NOTES = ("fragmentation: ",)  # notes every image gets: said in one line by default, whole with --explain


@dataclass(frozen=True)
class Note:
    number: int
    text: str
    configs: tuple[str, ...]  # the configurations it is about, in table order

    @property
    def routine(self) -> bool:
        return self.text.startswith(ROUTINE_NOTES)


@dataclass(frozen=True)
class TableRow:
    config: str
    status: str  # ok | failed | unavailable | no data
    cells: dict[str, str]  # column key -> the text shown
    tone: str = "neutral"  # the verdict's: neutral, good or bad
    recommended: bool = False
    unsafe: bool = False
    flags: tuple[str, ...] = ()  # the settings that trade safety for speed, by name
    notes: tuple[int, ...] = ()  # numbers of the notes under the table
    figures: dict[str, float | int | bool | None] = field(default_factory=dict)  # behind the cells: see numbers()


@dataclass(frozen=True)
class Answer:
    """What the run says for a workload: its sentences, the configuration named (none when undecided), why."""

    sentences: tuple[str, ...]
    choice: str | None  # the configuration named, if any
    reason: str  # why that one among those tied ('' when it leads alone)
    decided: bool | None = None

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass(frozen=True)
class ResultTable:
    workload: str
    settings: str
    unit: str
    direction: str  # higher is better | lower is better
    baseline: str | None
    counted: str  # what a measurement is called: "slices" or "runs"
    columns: tuple[Column, ...]
    rows: tuple[TableRow, ...]
    notes: tuple[Note, ...]
    answer: Answer
    adjusted: str = "Holm-adjusted verdicts"  # how the comparisons with the baseline allow for being many

    @property
    def caption(self) -> str:
        against = f"; vs {self.baseline}, {self.adjusted}" if self.baseline else ""
        return f"{self.workload}: median {self.unit} ({self.direction}){against}"


def p99(row: Row) -> tuple[str, float | None]:
    """The p99 latency the workload reports (commit, fsync or write), median over the runs."""
    for name in P99_METRICS:
        mv = row.metric(name)
        if mv is not None and mv.summary is not None:
            return fmt_seconds(mv.summary.median), mv.summary.median
    return "-", None


def vs_baseline(row: Row, view: WorkloadView) -> str:
    """Speed against the baseline with its 95% interval, in the one unit of every view: '2.10x [1.50x to 2.70x]'
    (a time ratio inverted, so above 1 is always faster)."""
    if row.cell.config.name == view.baseline:
        return "baseline"
    c = row.comparison
    if c is None:
        return "-"
    return factor_interval(*speed_interval(c, row.primary.metric.higher_is_better))


def verdict_cell(row: Row, view: WorkloadView) -> tuple[str, str]:
    """The verdict on the comparison, as the comparison holds it: 'faster, p<0.001', 'not significant'."""
    if row.status != "ok":
        return row.status, "bad"
    if row.cell.config.name == view.baseline:
        return "-", "neutral"
    c = row.comparison
    if c is None:
        return "-", "neutral"
    if not c.significant:
        excludes = c.ci_low > 1 or c.ci_high < 1  # an unadjusted interval beside a Holm-adjusted verdict
        return ("not significant after Holm" if excludes else "not significant"), "neutral"
    faster = speed(c.ratio, row.primary.metric.higher_is_better) > 1
    return f"{'faster' if faster else 'slower'}, {fmt_p(c.p_adjusted)}", "good" if faster else "bad"


def margin_cell(row: Row, found: Finding | None) -> str:
    """A race's verdict at the margin, of its own beside the verdict on the interval: 'preferred', 'within' (the
    margin), 'not settled' (at it), 'out' (slower than another by more than it); '-' for a row that is no
    candidate (a setting that can lose data, a reference); 'check' for a copy of another configuration (an A/A
    check: its original's verdict is the setup's)."""
    if found is None:
        return "-"
    name = row.cell.config.name
    if name == found.preferred:
        return "preferred"
    if any(c.name == name for c in found.checks):
        return "check"
    return next((STANDING_CELL[c.standing] for c in found.contenders if c.name == name), "-")


def columns_for(view: WorkloadView) -> tuple[Column, ...]:
    counted = counted_as(view)
    cols = [Column(CONFIGURATION, "configuration", numeric=False),
            Column(MEDIAN, "median"),
            Column(VS, f"vs {view.baseline or 'baseline'} [95% interval]"),  # the caption says when simultaneous
            Column(VERDICT, "verdict", numeric=False)]
    if view.race is not None:
        margin = margin_words(view.race.decision.margin)
        cols.append(Column(MARGIN, f"{margin} margin", numeric=False))
    if any(p99(r)[1] is not None for r in view.rows):
        cols.append(Column(P99, "p99", wide=True))
    cols += [Column(COUNT, counted, wide=True),
             Column(GEOMEAN, INTERVAL_HEAD, detail=True),
             Column(SANITIZED, "sanitized mean", detail=True),
             Column(NOTES, "notes", numeric=False)]
    return tuple(cols)


def counted_as(view: WorkloadView) -> str:
    return "slices" if any(r.slice_s for r in view.rows) else "runs"


def row_notes(row: Row) -> list[str]:
    """A row's notes: why it has no figures, or what disturbed it."""
    if row.status != "ok":
        return [f"{row.status}: {status_detail(row)}"]
    return list(row.notes)


def _numbered(view: WorkloadView) -> tuple[list[Note], dict[str, tuple[int, ...]]]:
    """Every distinct note once, numbered in the order met, with the configurations it is about."""
    texts: dict[str, list[str]] = {}
    for r in view.rows:
        for text in row_notes(r):
            names = texts.setdefault(text, [])
            if r.cell.config.name not in names:
                names.append(r.cell.config.name)
    notes = [Note(i, text, tuple(names)) for i, (text, names) in enumerate(texts.items(), start=1)]
    refs = {r.cell.config.name: tuple(n.number for n in notes if r.cell.config.name in n.configs)
            for r in view.rows}
    return notes, refs


def answer_for(view: WorkloadView) -> Answer:
    """The recommendation: from the race's decision when the run was raced, else as the judge of runs measured before the race gave it (analysis/whole.py); `decided`
    false when the run could not decide (it then names no configuration)."""
    if view.latency is not None:  # at a fixed rate: by latency from the schedule (analysis/latency.py)
        said = latency_sentences(view.latency)
        return Answer(said, view.latency.answer, said[0], view.latency.settled)
    if view.race is not None:
        d = view.race.decision
        sentences = tuple(recommend(view)) if view.measured else ()
        return Answer(sentences, recommended(view), sentences[0] if sentences else "", d.settled)
    picked = view.choice if view.measured else None
    reason = picked.why if picked else ""
    return Answer(tuple(recommend(view)), picked.chosen.cell.config.name if picked else None, str(reason),
                  picked is not None)


LIVE_ANSWER = Answer((), None, "", None)  # a run still being executed: no answer until it ends


def build_table(view: WorkloadView, live: bool = False) -> ResultTable:
    """The table model of a workload; `live` (a run still being executed): its partial figures with no answer,
    no configuration marked and no verdict at the margin."""
    metric = view.rows[0].primary.metric if view.rows else MetricDef("value", "", True)
    found = finding(view) if view.race is not None and not live else None
    notes, refs = _numbered(view)
    answer = LIVE_ANSWER if live else answer_for(view)
    rows = []
    for r in view.rows:
        s = r.primary.summary
        text, tone = verdict_cell(r, view)
        cells = {CONFIGURATION: r.cell.config.name, MEDIAN: fmt_value(s.median if s else None, metric),
                 VS: vs_baseline(r, view), VERDICT: text, MARGIN: margin_cell(r, found), P99: p99(r)[0], COUNT: str(s.n if s else 0),
                 GEOMEAN: interval(r),
                 SANITIZED: sanitized(r), NOTES: " ".join(str(n) for n in refs[r.cell.config.name])}
        rows.append(TableRow(r.cell.config.name, r.status, cells, tone, r.cell.config.name == answer.choice,
                             r.unsafe, r.flags, refs[r.cell.config.name], numbers(r, view)))
    settings = ", ".join(f"{k}={v}" for k, v in sorted(view.settings.items()))
    adjusted = "simultaneous 95%" if view.race else "Holm-adjusted verdicts"
    return ResultTable(view.label, settings, metric.unit, direction(metric), view.baseline, counted_as(view),
                       columns_for(view), tuple(rows), tuple(notes), answer, adjusted)


def numbers(row: Row, view: WorkloadView) -> dict[str, float | int | bool | None]:
    """The figures behind a row's cells, for CSV and JSON (SI units, unrounded)."""
    s = row.primary.summary
    c = row.comparison
    out: dict[str, float | int | bool | None] = {"median": s.median if s else None, "count": s.n if s else 0,
                                                 "sanitized_mean": s.sanitized_mean if s else None,
                                                 "p99_s": p99(row)[1]}
    est = log_interval(row.primary.values) if len(row.primary.values) > 1 else None
    out["geometric_mean"] = est[0] if est else None
    if c is not None and row.cell.config.name != view.baseline:
        sp, lo, hi = speed_interval(c, row.primary.metric.higher_is_better)
        out.update({"speed_vs_baseline": sp, "speed_ci_low": lo, "speed_ci_high": hi, "p": c.p,
                    "p_adjusted": c.p_adjusted, "significant": c.significant})
    return out


def terse_answer(workload: str, a: Answer) -> str:
    """A workload's answer in one line: 'LABEL: NAME', ' (undecided)' when the run could not decide, 'none'."""
    if a.choice is None:
        return f"{workload}: none"
    state = {None: "", True: "", False: " (undecided)"}[a.decided]
    return f"{workload}: {a.choice}{state}"


def breakdown_transposed(configs: list[str], rows: list[tuple[str, list[str]]]) -> tuple[list[str],
                                                                                        list[tuple[str, list[str]]]]:
    """The breakdown with a row per configuration (names never cut, however many there are) and a column per
    figure."""
    heads = [label for label, _ in rows]
    return heads, [(name, [cells[i] for _, cells in rows]) for i, name in enumerate(configs)]
