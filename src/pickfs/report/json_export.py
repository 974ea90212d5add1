"""The run as JSON (schema pickfs.run/2, described in docs/reports.md): stable, versioned, for other tools. A
document of the schema before (pickfs.run/1) is read by report/json_read.py."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pickfs.analysis.answer import ANSWER_FAMILY, ANSWER_LEVEL, finding, recommended, recommended_setup
from pickfs.analysis.run import AnalysedRun, analysed
from pickfs.analysis.setup import what_it_is
from pickfs.analysis.views import RACE_FAMILY, WorkloadView, summary_dict
from pickfs.model import RunRecord
from pickfs.report.disturbance import disturbance_dict
from pickfs.report.json_text import strict_json
from pickfs.report.latency import latency_dict
from pickfs.report.recommend import recommend
from pickfs.report.table import build_table
from pickfs.report.text import verdict
from pickfs.stats.summary import log_interval

SCHEMA = "pickfs.run/2"
DF_KEYS = ("size of the filesystem", "free with the data in place")


def table_interval(view: WorkloadView) -> dict[str, Any]:
    """The family the table's intervals belong to: each against the baseline, simultaneous 95% (a race), or 95%
    each with Holm-adjusted verdicts."""
    compared = sum(1 for r in view.rows if r.comparison is not None and r.cell.config.name != view.baseline)
    if view.race is not None:
        return {"family": "simultaneous", "level": 0.95, "against": view.baseline, "comparisons": compared,
                "text": f"each against {view.baseline}, simultaneous 95% over {compared} comparisons"}
    return {"family": "holm", "level": 0.95, "against": view.baseline, "comparisons": compared,
            "text": f"each against {view.baseline}, 95% each; verdicts Holm-adjusted over {compared} comparisons"}


def table_dict(view: WorkloadView, live: bool = False) -> dict[str, Any]:
    """The table model as every other format shows it (same columns, same names), with the figures behind each
    row and the answer: its text, the configuration named, the reason, whether the run decided, and the setup to
    apply; the family its intervals belong to."""
    table = build_table(view, live)
    setup = None if live else recommended_setup(view)
    return {
        "workload": table.workload,
        "caption": table.caption,
        "baseline": table.baseline,
        "counted": table.counted,
        "columns": [{"key": c.key, "heading": c.head} for c in table.columns],
        "rows": [{"configuration": r.config, "status": r.status, "recommended": r.recommended, "unsafe": r.unsafe,
                  "flags": list(r.flags), "cells": {c.key: r.cells.get(c.key, "") for c in table.columns},
                  "notes": list(r.notes), "figures": r.figures} for r in table.rows],
        "notes": [{"number": n.number, "text": n.text, "configurations": list(n.configs)} for n in table.notes],
        "answer": {"text": table.answer.text, "sentences": list(table.answer.sentences),
                   "configuration": table.answer.choice, "reason": table.answer.reason,
                   "decided": table.answer.decided, "setup": None if setup is None else setup.as_dict()},
        "interval": table_interval(view),
    }


def run_to_dict(run: RunRecord | AnalysedRun) -> dict[str, Any]:
    cells = []
    answers = []
    analysis = analysed(run)
    record, views, live = analysis.record, analysis.views, analysis.live
    for view in views:
        chosen = None if live else recommended(view)
        if view.measured and not live:  # a run still being executed has no answer yet
            answers.append(answer_dict(view))
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
        "live": live,  # still being executed: partial figures, no answers yet
        "answers": answers,
        # what each configuration is (every format says it)
        "configurations": [{"name": c.name, "what": what_it_is(c), **c.settings()} for c in analysis.plan.configs],
        "cells": cells,
        # one per workload measured: the table every format shows, and the answer
        "tables": [table_dict(v, live) for v in views if v.measured],
        **latency_dict(analysis.fixed),  # fixed rate and the capacity search, when the run has them: report/latency.py
        # how busy the machine was, when its slices recorded it (report/disturbance.py)
        **({} if analysis.disturbance is None else {"disturbance": disturbance_dict(analysis.disturbance)}),
    }


def answer_dict(view: WorkloadView) -> dict[str, Any]:
    """A workload's answer for the JSON export: decided or not, the configuration, the reason in words,
    and for a race its margin, the preferred configuration (settled or not), each contender's speed factor
    against it with its 95% interval and standing at the margin ('within', 'at', 'out') and whether a rerun may
    decide it otherwise (close to the margin: reruns of one finding share the pair and the flag), what would settle an
    unsettled one (more seconds at the current rate, null when at the margin; or a wider margin), the
    configurations it could not decide between, who left when, the setup of the configuration recommended, and
    the family each interval belongs to."""
    sentences = recommend(view)
    setup = recommended_setup(view)
    out: dict[str, Any] = {"workload": view.label, "answer": recommended(view), "reason": " ".join(sentences),
                           "setup": None if setup is None else setup.as_dict()}
    if view.race is None:
        out["decided"] = out["answer"] is not None
        return out
    d = view.race.decision
    f = finding(view)
    out.update({"decided": d.settled and d.answer is not None, "margin": d.margin,
                "preferred": f.preferred if f else None, "settled": f.settled if f else d.settled,
                "contenders": [{"config": c.name, "factor": c.factor, "ci_low": c.low, "ci_high": c.high,
                                "standing": c.standing, "close_to_margin": c.close_to_margin}
                               for c in f.contenders] if f else [],
                "interval": {"family": "margin", "level": ANSWER_LEVEL, "against": f.preferred if f else None,
                             "text": f"{ANSWER_FAMILY} against the preferred, as the margin is tested"},
                "would_settle": ({"more_seconds": f.more_s, "margin": f.wider} if f and not f.settled else None),
                "undecided_between": list(d.tied) if not d.settled else [],
                "left_the_race": [{"config": n, "after_round": r + 1, "why": why, "interval": RACE_FAMILY}
                                  for n, r, why in view.race.left],
                "baseline_images": list(view.race.baseline_images), "minutes": view.race.minutes})
    return out


def render_json(run: RunRecord | AnalysedRun) -> str:
    return strict_json(run_to_dict(run))
