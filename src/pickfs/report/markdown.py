"""The run as Markdown, for pasting into an issue or a wiki (pure)."""

from __future__ import annotations

import time

from pickfs.model import RunRecord
from pickfs.report.recommend import recommend
from pickfs.report.text import CRASH_COLUMNS, breakdown_cells, crash_cells, crash_model, fmt_value, interval, status_detail, verdict
from pickfs.report.views import build_views, risk_legend


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(record: RunRecord) -> str:
    views = build_views(record)
    host = record.host
    lines = [f"# pickfs run {record.id}", "",
             f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(record.created))}, {host.get('hostname', '?')}: "
             f"{host.get('os', '?')}, kernel {host.get('kernel', '?')}, {host.get('cpus', '?')} CPUs; "
             f"status {record.status}.", ""]
    for view in views:
        metric = view.rows[0].primary.metric if view.rows else None
        unit = metric.unit if metric else ""
        settings = ", ".join(f"{k}={v}" for k, v in sorted(view.settings.items()))
        lines += [f"## {view.label}", "", f"`{settings}`", ""]
        if view.measured:
            lines += [f"| configuration | median {unit} | mean ± 95% CI | vs {view.baseline or 'baseline'} | "
                      "significance | runs | notes |", "|---|---:|---:|---:|---|---:|---|"]
        for r in view.rows if view.measured else ():
            s = r.primary.summary
            sig = verdict(r, view.baseline)[0]
            notes = "; ".join([f"⚠ {f}" for f in r.flags] + list(r.notes)) if r.status == "ok" else \
                f"{r.status}: {status_detail(r)}"
            rel = "-" if r.relative is None else f"{r.relative:.1f}"
            lines.append(f"| {_cell(r.cell.config.name)} | {fmt_value(s.median if s else None, r.primary.metric)} "
                         f"| {interval(r)} | {rel} | {_cell(sig)} | {s.n if s else 0} | {_cell(notes)} |")
        configs, details = breakdown_cells(view)
        if details and configs:
            note = f" ((n): {view.baseline} = 100)" if view.baseline else ""
            lines += ["", f"Medians per configuration{note}:", "",
                      "| | " + " | ".join(_cell(c) for c in configs) + " |", "|---|" + "---:|" * len(configs)]
            lines += [f"| {_cell(label)} | " + " | ".join(cells) + " |" for label, cells in details]
        crash = crash_cells(view)
        if crash:
            lines += ["", "Crash test (acknowledged commits after a simulated power cut):", "",
                      "| configuration | " + " | ".join(CRASH_COLUMNS) + " |", "|---|" + "---:|" * (len(CRASH_COLUMNS) - 1)
                      + "---|"]
            lines += [f"| {_cell(name)} | " + " | ".join(_cell(c) for c in cells) + " |" for name, cells, _ in crash]
            lines += ["", f"Model: {crash_model(view)}."]
        if view.measured:
            lines += ["", "**Recommendation.** " + " ".join(recommend(view))]
        lines += [""]
    legend = risk_legend(views)
    if legend:
        lines += ["### Settings that trade safety for speed", ""] + [f"- {x}" for x in legend] + [""]
    return "\n".join(lines)
