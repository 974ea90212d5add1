"""The one list of a report's sections, and the interface every format implements (pure).

A stored run is analysed once (analysis/run.py); `report_of` adds each measured workload's table model
(report/table.py), built once; `sections` turns that into the ordered list every format draws: the heading, how busy
the machine was, the plan's warnings, the answers, each workload's part, the crash model, the settings that trade
safety for speed, scaling with clients, the fixed-rate figures, what each configuration is, the machine, the run's
notes and the hint for more.

A format (`Format`) draws each kind of section with a method of its own, and assembles its parts into its document.
Every kind is an abstract method, so a new kind of section is drawn by every format or the format cannot be made;
a format that leaves a kind out says so in that method (it returns no part, with the reason beside it). No format
parses the plan or analyses the run again: what it draws is in the section. The formats are registered in
report/formats.py.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from pickfs.analysis.answer import recommended, recommended_setup
from pickfs.analysis.latency import FixedRate
from pickfs.analysis.run import AnalysedRun, analysed
from pickfs.analysis.setup import Setup, what_it_is
from pickfs.analysis.views import WorkloadView, risk_legend
from pickfs.model import FsConfig, RunRecord
from pickfs.report.crash_text import crash_statements
from pickfs.report.disturbance import disturbance_line
from pickfs.report.scaling import Scaling, scaling_data
from pickfs.report.table import Answer, ResultTable, answer_for, build_table
from pickfs.report.text import live_line
from pickfs.stats.disturbance import Disturbance

Part = TypeVar("Part")  # what a format draws of one section
Doc = TypeVar("Doc")  # the document a format assembles from its parts


@dataclass(frozen=True)
class Report:
    """What every format draws: the analysed run, whether it is still being executed, and each measured workload's
    table model (built once, by label)."""

    analysis: AnalysedRun
    live: bool
    tables: Mapping[str, ResultTable]


def report_of(run: RunRecord | AnalysedRun | Report, live: bool = False) -> Report:
    """The run ready to draw: analysed (as given when it already is) and its tables built once; a Report as it is,
    unless `live` says of a Report built as ended that the run is still being executed (its tables then built again,
    as a live run's)."""
    if isinstance(run, Report):
        if run.live or not live:
            return run
        run = run.analysis
    analysis = analysed(run)
    live = live or analysis.live
    return Report(analysis, live, {v.label: build_table(v, live) for v in analysis.views if v.measured})


@dataclass(frozen=True)
class WorkloadAnswer:
    """A measured workload's answer: the judge's answer in words, the configuration named and its setup to apply."""

    view: WorkloadView
    answer: Answer
    named: str | None  # the configuration recommended (None: none)
    setup: Setup | None  # its setup to apply (None: none recommended, or nothing to make)

    @property
    def label(self) -> str:
        return self.view.label


class Section(ABC):
    """One part of a report, drawn by every format."""

    @abstractmethod
    def draw(self, fmt: Format[Part, Doc]) -> Part:
        """This section as `fmt` draws it (each kind calls the format's method of its own)."""


@dataclass(frozen=True)
class Heading(Section):
    """The run: its id, status, date and machine; for a run still being executed, that it is (`live`, the line)."""

    analysis: AnalysedRun
    live: str | None

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.heading(self)


@dataclass(frozen=True)
class Disturbed(Section):
    """How busy the machine was, said before the answer (`line` None: nothing to say)."""

    disturbance: Disturbance | None
    line: str | None

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.disturbed(self)


@dataclass(frozen=True)
class Warnings(Section):
    """What the plan's check warned of."""

    lines: tuple[str, ...]

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.warnings(self)


@dataclass(frozen=True)
class Answers(Section):
    """Every measured workload's answer with the setup to apply (a run still being executed gives none: `live`)."""

    items: tuple[WorkloadAnswer, ...]
    live: bool

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.answers(self)


@dataclass(frozen=True)
class Workload(Section):
    """One workload's part: its table (None when nothing was measured), figures, crash test, method and why."""

    record: RunRecord  # its trials, for the charts drawn from a slice's own samples
    view: WorkloadView
    table: ResultTable | None
    answer: WorkloadAnswer | None
    live: bool

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.workload(self)


@dataclass(frozen=True)
class CrashModel(Section):
    """The crash model in force and what no simulation shows, once per report (each distinct line)."""

    lines: tuple[str, ...]
    views: tuple[WorkloadView, ...]  # for the chart of every crash test

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.crash_model(self)


@dataclass(frozen=True)
class RiskLegend(Section):
    """Every setting that trades safety for speed, once, in the order first met."""

    lines: tuple[str, ...]

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.risk_legend(self)


@dataclass(frozen=True)
class ScalingWithClients(Section):
    """Throughput and p99 against clients, per workload run at several client counts."""

    scalings: tuple[Scaling, ...]

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.scaling(self)


@dataclass(frozen=True)
class FixedRates(Section):
    """Latency from the scheduled start at a fixed rate, and the capacity search."""

    fixed: FixedRate

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.fixed_rates(self)


@dataclass(frozen=True)
class Configurations(Section):
    """What each configuration is, in the one wording of analysis/setup.py `what_it_is`: (the configuration, what
    it is)."""

    items: tuple[tuple[FsConfig, str], ...]

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.configurations(self)


@dataclass(frozen=True)
class Machine(Section):
    """The machine's facts as the run stored them, in full."""

    record: RunRecord

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.machine(self)


@dataclass(frozen=True)
class RunNotes(Section):
    """What the run noted while it ran."""

    notes: tuple[str, ...]

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.run_notes(self)


@dataclass(frozen=True)
class MoreHint(Section):
    """Where more is said (`shown` false: a race's line says it already)."""

    shown: bool

    def draw(self, fmt: Format[Part, Doc]) -> Part:
        return fmt.more_hint(self)


def answer_of(view: WorkloadView, table: ResultTable | None, live: bool) -> WorkloadAnswer:
    """A measured workload's answer: its table's, or (a run still being executed, whose table gives none) the
    judge's answer so far, which only --quiet names, marked as still running."""
    answer = answer_for(view) if live or table is None else table.answer
    return WorkloadAnswer(view, answer, recommended(view), recommended_setup(view))


def sections(report: Report) -> tuple[Section, ...]:
    """The report's sections in the one order every format draws them."""
    a = report.analysis
    views = a.views
    answers = {v.label: answer_of(v, report.tables.get(v.label), report.live) for v in views if v.measured}
    return (Heading(a, live_line(a) if report.live else None),
            Disturbed(a.disturbance, disturbance_line(a.disturbance)),
            Warnings(tuple(a.plan.warnings)),
            Answers(tuple(answers.values()), report.live),
            *(Workload(a.record, v, report.tables.get(v.label), answers.get(v.label), report.live) for v in views),
            CrashModel(tuple(crash_statements(list(views))), views),
            RiskLegend(tuple(risk_legend(list(views)))),
            ScalingWithClients(tuple(scaling_data(views))),
            FixedRates(a.fixed),
            Configurations(tuple((c, what_it_is(c)) for c in a.plan.configs)),
            Machine(a.record),
            RunNotes(tuple(a.record.notes)),
            MoreHint(not any(v.race is not None for v in views)))


class Format(ABC, Generic[Part, Doc]):
    """A way of drawing a run: one method per kind of section, each returning this format's part (empty where the
    format leaves the kind out, saying why), and the document assembled from the parts in order."""

    name: str = ""  # what it is called, for a person reading the registry; a format written to a file: its option
    suffix: str = ""  # a format written to a file (pickfs report/run --NAME FILE): the file's suffix; '': only shown
    export_help: str = ""  # a format written to a file: what its option writes, for --help

    def render(self, run: RunRecord | AnalysedRun | Report, live: bool = False) -> Doc:
        """The run drawn: every section in order, assembled (`live`: a run still being executed)."""
        report = report_of(run, live)
        return self.document(report, [s.draw(self) for s in sections(report)])

    def text(self, run: RunRecord | AnalysedRun | Report) -> str:
        """The run drawn as the text its file holds (a format whose document is not text says how it is written)."""
        doc = self.render(run)
        if not isinstance(doc, str):
            raise TypeError(f"the {self.name} format draws no text: it says how its document is written")
        return doc

    @abstractmethod
    def document(self, report: Report, parts: list[Part]) -> Doc:
        """The parts, in the sections' order, as this format's document."""

    @abstractmethod
    def heading(self, s: Heading) -> Part: ...

    @abstractmethod
    def disturbed(self, s: Disturbed) -> Part: ...

    @abstractmethod
    def warnings(self, s: Warnings) -> Part: ...

    @abstractmethod
    def answers(self, s: Answers) -> Part: ...

    @abstractmethod
    def workload(self, s: Workload) -> Part: ...

    @abstractmethod
    def crash_model(self, s: CrashModel) -> Part: ...

    @abstractmethod
    def risk_legend(self, s: RiskLegend) -> Part: ...

    @abstractmethod
    def scaling(self, s: ScalingWithClients) -> Part: ...

    @abstractmethod
    def fixed_rates(self, s: FixedRates) -> Part: ...

    @abstractmethod
    def configurations(self, s: Configurations) -> Part: ...

    @abstractmethod
    def machine(self, s: Machine) -> Part: ...

    @abstractmethod
    def run_notes(self, s: RunNotes) -> Part: ...

    @abstractmethod
    def more_hint(self, s: MoreHint) -> Part: ...
