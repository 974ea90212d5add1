"""The run as JSON (schema pickfs.run/1): stable, versioned, for other tools."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from pickfs.model import RunRecord
from pickfs.report.latency import latency_dict
from pickfs.report.recommend import recommended
from pickfs.report.text import verdict
from pickfs.report.views import build_views, summary_dict
from pickfs.stats.summary import log_interval

SCHEMA = "pickfs.run/1"
DF_KEYS = ("size of the filesystem", "free with the data in place")


def run_to_dict(record: RunRecord) -> dict[str, Any]:
    cells = []
    for view in build_views(record):
        chosen = recommended(view)
        for row in view.rows:
            est = log_interval(row.primary.values)
            cells.append({
                "config": row.cell.config.name,
                "config_settings": row.cell.config.settings(),
                "workload": view.label,
                "workload_name": view.name,
                "workload_settings": view.settings,
                "status": row.status,
                "metric": row.primary.metric.name,
                "unit": row.primary.metric.unit,
                "higher_is_better": row.primary.metric.higher_is_better,
                "values": list(row.primary.values),
                "summary": summary_dict(row.primary.summary),
                # the interval on the log scale (a rate or a time stays positive): geometric mean, low, high
                "log_interval": None if est is None else dict(zip(("geometric_mean", "low", "high"), est)),
                "workload_kind": view.kind,
                "recommended": row.cell.config.name == chosen,
                "against_baseline": verdict(row, view.baseline)[0],
                "baseline": view.baseline,
                "relative_to_baseline": row.relative,
                "metrics": {
                    mv.metric.name: {"unit": mv.metric.unit, "values": list(mv.values),
                                     "summary": summary_dict(mv.summary)}
                    for mv in (row.primary, *row.others)
                },
                "comparison": asdict(row.comparison) if row.comparison else None,
                "method": row.method,
                "slice_s": row.slice_s,
                "idle_neighbours_wrote_bytes": list(row.neighbour_writes),
                "resolution": None if view.resolution is None else dict(zip(("median", "lowest", "highest"),
                                                                             view.resolution)),
                "risks": list(row.risks),
                "notes": list(row.notes),
                "explanation": list(row.explanation),
                "monitors": row.monitors,
                "space_used_bytes": {k: v for k, v in row.space.items() if k not in DF_KEYS},
                # as df counts them, once the workload's data is in place
                "filesystem_size_bytes": row.space.get("size of the filesystem"),
                "free_bytes": row.space.get("free with the data in place"),
                "crash": None if row.crash is None else {
                    "verdict": row.crash.verdict(), "lost_any": row.crash.lost_any, "metrics": row.crash.metrics,
                    "states": list(row.crash.states), "model": row.crash.model, "error": row.crash.error,
                    "unseen": row.crash.unseen, "not_exercised": list(row.crash.gaps), "unit": row.crash.unit},
            })
    return {
        "schema": SCHEMA,
        "run_id": record.id,
        "status": record.status,
        "created": record.created,
        "updated": record.updated,
        "pickfs_version": record.pickfs_version,
        "host": record.host,
        "plan": record.plan,
        "notes": list(record.notes),
        "cells": cells,
        **latency_dict(record),  # fixed rate and the capacity search, when the run has them: report/latency.py
    }


def render_json(record: RunRecord) -> str:
    return json.dumps(run_to_dict(record), indent=2, sort_keys=False) + "\n"
