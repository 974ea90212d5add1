"""CSV (pure): one row per trial, with its block (the filesystems it ran on) and round, so no two rows of
side-by-side slices look alike (the raw figures, not a report of sections); and the results table, a format of
report/sections.py's sections."""

from __future__ import annotations

import csv
import io

from pickfs.analysis.run import AnalysedRun, analysed
from pickfs.model import RunRecord
from pickfs.report.sections import (
    Answers,
    Configurations,
    CrashModel,
    Disturbed,
    FixedRates,
    Format,
    Heading,
    Machine,
    MoreHint,
    Report,
    RiskLegend,
    RunNotes,
    ScalingWithClients,
    Warnings,
    Workload,
)
from pickfs.report.table import ResultTable

FIGURES = ("median", "speed_vs_baseline", "speed_ci_low", "speed_ci_high", "p", "p_adjusted", "significant",
           "geometric_mean", "sanitized_mean", "p99_s", "count")


def render_csv(run: RunRecord | AnalysedRun | Report) -> str:
    analysis = run.analysis if isinstance(run, Report) else analysed(run)
    record, cells = analysis.record, analysis.plan.cells()
    metric_names = sorted({k for t in record.trials for k in t.metrics})
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["run_id", "config", "workload", "block", "round", "repetition", "phase", "started", "elapsed_s", "ok",
                *metric_names, "error"])
    for t in record.trials:
        cell = cells[t.cell_index]
        w.writerow([record.id, cell.config.name, cell.workload.label, t.block, "" if t.round is None else t.round,
                    t.repetition, t.phase, f"{t.started:.3f}",
                    f"{t.elapsed_s:.6f}", int(t.ok), *[t.metrics.get(m, "") for m in metric_names], t.error])
    return buf.getvalue()


TableRows = list[ResultTable]  # the workload's table (none for a section without one), as the table CSV draws it


class TableCsvFormat(Format[TableRows, str]):
    """The results table every format shows, one row per workload and configuration: the columns under their keys
    as shown (the same cells as the terminal, Markdown, HTML and JSON), then the figures behind them unrounded
    (SI units; speed above 1 is faster), whether it is the one recommended, and whether the run decided. Only the
    workloads' sections have rows: the others are words, or in the trials CSV and the JSON."""

    name = "table-csv"
    suffix = "csv"
    export_help = ("write the results table as CSV: one row per workload and configuration, the columns every format "
                   "shows and the figures behind them (a fault run: one row per cell)")

    def document(self, report: Report, parts: list[TableRows]) -> str:
        tables = [t for part in parts for t in part]
        keys: list[str] = []
        for t in tables:
            keys += [c.key for c in t.columns if c.key not in keys]
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["run_id", "workload", *keys, *(f"{f}_value" for f in FIGURES), "recommended", "decided"])
        for t in tables:
            for row in t.rows:
                w.writerow([report.analysis.record.id, t.workload, *(row.cells.get(k, "") for k in keys),
                            *("" if row.figures.get(f) is None else row.figures[f] for f in FIGURES),
                            int(row.recommended), "" if t.answer.decided is None else int(t.answer.decided)])
        return buf.getvalue()

    def workload(self, s: Workload) -> TableRows:
        return [] if s.table is None else [s.table]

    def heading(self, s: Heading) -> TableRows:
        return []  # each row names its run

    def disturbed(self, s: Disturbed) -> TableRows:
        return []

    def warnings(self, s: Warnings) -> TableRows:
        return []

    def answers(self, s: Answers) -> TableRows:
        return []  # each row says whether it is the one recommended, and whether the run decided

    def crash_model(self, s: CrashModel) -> TableRows:
        return []

    def risk_legend(self, s: RiskLegend) -> TableRows:
        return []

    def scaling(self, s: ScalingWithClients) -> TableRows:
        return []

    def fixed_rates(self, s: FixedRates) -> TableRows:
        return []

    def configurations(self, s: Configurations) -> TableRows:
        return []

    def machine(self, s: Machine) -> TableRows:
        return []

    def run_notes(self, s: RunNotes) -> TableRows:
        return []

    def more_hint(self, s: MoreHint) -> TableRows:
        return []


TABLE_CSV = TableCsvFormat()


def render_table_csv(run: RunRecord | AnalysedRun | Report) -> str:
    return TABLE_CSV.render(run)
