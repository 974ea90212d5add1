"""One row per trial, as CSV (pure): with its block (the filesystems it ran on) and round, so no two rows of
side-by-side slices look alike."""

from __future__ import annotations

import csv
import io

from pickfs.model import RunRecord, plan_from_dict


def render_csv(record: RunRecord) -> str:
    cells = plan_from_dict(record.plan).cells()
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
