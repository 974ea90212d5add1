"""The JSON format: the run as data (schema pickfs.run/2, described in docs/reports.md), stable, versioned, for other
tools, drawn from report/sections.py's sections. A document of the schema before (pickfs.run/1) is read by
report/json_read.py."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pickfs.analysis.answer import ANSWER_FAMILY, ANSWER_LEVEL, finding
from pickfs.analysis.run import AnalysedRun
from pickfs.analysis.setup import Setup
from pickfs.analysis.views import RACE_FAMILY, WorkloadView, summary_dict
from pickfs.model import RunRecord
from pickfs.report.disturbance import disturbance_dict
from pickfs.report.json_text import strict_json
from pickfs.report.latency import latency_dict
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
    WorkloadAnswer,
)
from pickfs.report.table import ResultTable
from pickfs.report.text import verdict
from pickfs.stats.decision import ALPHA
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


def table_dict(table: ResultTable, view: WorkloadView, setup: Setup | None) -> dict[str, Any]:
    """The table model as every other format shows it (same columns, same names), with the figures behind each
    row and the answer: its text, the configuration named, the reason, whether the run decided, and the setup to
    apply (`setup`; None for a run still being executed); the family its intervals belong to."""
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


def cell_dicts(view: WorkloadView, chosen: str | None) -> list[dict[str, Any]]:
    """Per configuration of a workload: its settings, figures, comparison, risks, notes, monitors, space, crash test
    (`chosen`: the configuration recommended, None for none or a run still being executed)."""
    cells = []
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
    return cells


# The document's keys in the order the schema lists them (docs/reports.md); each section gives some of them.
KEYS = ("schema", "run_id", "status", "created", "updated", "pickfs_version", "host", "plan", "notes", "live", "answers",
        "configurations", "cells", "tables", "fixed_rate", "capacity", "disturbance", "scaling")
LISTS = ("cells", "tables")  # gathered over the workloads' sections, in order


class JsonFormat(Format[dict[str, Any], dict[str, Any]]):
    """The run as data (schema pickfs.run/2): each section gives its keys; the document lists them in the schema's
    order. What a section says in words elsewhere is here as the figures behind it."""

    name = "json"
    suffix = "json"
    export_help = "write the run as JSON ('-': stdout)"

    def document(self, report: Report, parts: list[dict[str, Any]]) -> dict[str, Any]:
        merged: dict[str, Any] = {key: [] for key in LISTS}
        for part in parts:
            for key, value in part.items():
                if key in LISTS:
                    merged[key] += value
                else:
                    merged[key] = value
        return {**{k: merged[k] for k in KEYS if k in merged}, **{k: v for k, v in merged.items() if k not in KEYS}}

    def heading(self, s: Heading) -> dict[str, Any]:
        record = s.analysis.record
        return {"schema": SCHEMA, "run_id": record.id, "status": record.status, "created": record.created,
                "updated": record.updated, "pickfs_version": record.pickfs_version, "plan": record.plan,
                "live": s.live is not None}  # still being executed: partial figures, no answers yet

    def disturbed(self, s: Disturbed) -> dict[str, Any]:
        # how busy the machine was, when its slices recorded it (report/disturbance.py)
        return {} if s.disturbance is None else {"disturbance": disturbance_dict(s.disturbance)}

    def warnings(self, s: Warnings) -> dict[str, Any]:
        return {}  # in `plan`, as stored

    def answers(self, s: Answers) -> dict[str, Any]:
        return {"answers": [] if s.live else [answer_dict(a) for a in s.items]}

    def workload(self, s: Workload) -> dict[str, Any]:
        chosen = None if s.live or s.answer is None else s.answer.named
        tables = [] if s.table is None else [table_dict(s.table, s.view, None if s.live or s.answer is None
                                                        else s.answer.setup)]
        return {"cells": cell_dicts(s.view, chosen), "tables": tables}

    def crash_model(self, s: CrashModel) -> dict[str, Any]:
        return {}  # each cell's `crash` holds its model and what it could not show

    def risk_legend(self, s: RiskLegend) -> dict[str, Any]:
        return {}  # each cell's `risks`

    def scaling(self, s: ScalingWithClients) -> dict[str, Any]:
        if not s.scalings:
            return {}
        return {"scaling": [{"workload": x.label, "metric": x.metric, "unit": x.unit,
                             "points": [asdict(p) for p in x.points]} for x in s.scalings]}

    def fixed_rates(self, s: FixedRates) -> dict[str, Any]:
        return latency_dict(s.fixed)  # fixed rate and the capacity search, when the run has them: report/latency.py

    def configurations(self, s: Configurations) -> dict[str, Any]:
        return {"configurations": [{"name": c.name, "what": what, **c.settings()} for c, what in s.items]}

    def machine(self, s: Machine) -> dict[str, Any]:
        return {"host": s.record.host}

    def run_notes(self, s: RunNotes) -> dict[str, Any]:
        return {"notes": list(s.notes)}

    def more_hint(self, s: MoreHint) -> dict[str, Any]:
        return {}  # the document holds everything

    def text(self, run: RunRecord | AnalysedRun | Report) -> str:
        return strict_json(self.render(run))


JSON = JsonFormat()


def run_to_dict(run: RunRecord | AnalysedRun | Report) -> dict[str, Any]:
    return JSON.render(run)


def answer_dict(said: WorkloadAnswer) -> dict[str, Any]:
    """A workload's answer for the JSON export: decided or not, the configuration, the reason in words,
    and for a race its margin, the preferred configuration (settled or not), each contender's speed factor
    against it with its 95% interval and standing at the margin ('within', 'at', 'out') and whether a rerun may
    decide it otherwise (close to the margin: reruns of one finding share the pair and the flag), what would settle an
    unsettled one (more seconds at the current rate, null when at the margin; or a wider margin), the
    configurations it could not decide between, who left when, the setup of the configuration recommended, and
    the family each interval belongs to."""
    view = said.view
    out: dict[str, Any] = {"workload": view.label, "answer": said.named, "reason": said.answer.text,
                           "setup": None if said.setup is None else said.setup.as_dict()}
    if view.race is None:
        out["decided"] = out["answer"] is not None
        return out
    d = view.race.decision
    f = finding(view)
    out.update({"decided": d.settled and d.answer is not None, "margin": d.margin,
                "preferred": f.preferred if f else None, "settled": f.settled if f else d.settled,
                "contenders": [{"config": c.name, "factor": c.factor, "ci_low": c.low, "ci_high": c.high,
                                "standing": c.standing, "close_to_margin": c.close_to_margin,
                                "more_preferred": c.more_preferred,
                                "rival": None if c.rival is None else {
                                    "config": c.rival.name, "factor": c.rival.factor, "ci_low": c.rival.low,
                                    "ci_high": c.rival.high}}
                               for c in f.contenders] if f else [],
                "checks": [{"config": c.name, "copy_of": c.original, "factor": c.factor, "ci_low": c.low,
                            "ci_high": c.high, "different": c.different, "simultaneous": c.simultaneous}
                           for c in f.checks] if f else [],
                "interval": {"family": "margin", "level": ANSWER_LEVEL if f is None or f.overturn_alpha >= ALPHA else None,
                             "one_sided": ALPHA, "overturn_one_sided": f.overturn_alpha if f else ALPHA,
                             "against": f.preferred if f else None,
                             "text": f"{f.family if f else ANSWER_FAMILY}: each contender against the preferred, "
                                     "as the decision tests the pair"},
                "would_settle": ({"more_seconds": f.more_s, "margin": f.wider} if f and not f.settled else None),
                "undecided_between": ([f.preferred, *(c.name for c in f.contenders if c.standing == "at")]
                                      if f and not f.settled else list(d.tied) if not d.settled else []),
                "left_the_race": [{"config": n, "after_round": r + 1, "why": why, "interval": RACE_FAMILY}
                                  for n, r, why in view.race.left],
                "baseline_images": list(view.race.baseline_images), "minutes": view.race.minutes})
    return out


def render_json(run: RunRecord | AnalysedRun | Report) -> str:
    return JSON.text(run)
