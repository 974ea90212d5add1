"""One row per trial, as CSV (pure): with its block (the filesystems it ran on) and round, so no two rows of
side-by-side slices look alike."""

from __future__ import annotations

import csv
import io

from pickfs.analysis.run import AnalysedRun, analysed
from pickfs.model import RunRecord
from pickfs.report.table import build_table

FIGURES = ("median", "speed_vs_baseline", "speed_ci_low", "speed_ci_high", "p", "p_adjusted", "significant",
           "geometric_mean", "sanitized_mean", "p99_s", "count")


def render_csv(run: RunRecord | AnalysedRun) -> str:
    analysis = analysed(run)
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


def render_table_csv(run: RunRecord | AnalysedRun) -> str:
    """The results table every format shows, one row per workload and configuration: the columns under their keys
    as shown (the same cells as the terminal, Markdown, HTML and JSON), then the figures behind them unrounded
    (SI units; speed above 1 is faster), whether it is the one recommended, and whether the run decided."""
    analysis = analysed(run)
    record, tables = analysis.record, [build_table(v, analysis.live) for v in analysis.views if v.measured]
    keys: list[str] = []
    for t in tables:
        keys += [c.key for c in t.columns if c.key not in keys]
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["run_id", "workload", *keys, *(f"{f}_value" for f in FIGURES), "recommended", "decided"])
    for t in tables:
        for row in t.rows:
            w.writerow([record.id, t.workload, *(row.cells.get(k, "") for k in keys),
                        *("" if row.figures.get(f) is None else row.figures[f] for f in FIGURES), int(row.recommended),
                        "" if t.answer.decided is None else int(t.answer.decided)])
    return buf.getvalue()
