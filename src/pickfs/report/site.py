"""All runs of a results store as a small static site (pure): an index (each run's answers as the QUIET format draws
them), a page per run (the HTML format), and a comparison page per plan that was run more than once. plotly.js is one file beside the pages,
so the site works offline and is not 5 MB per page."""

from __future__ import annotations

import hashlib
import html
import json
import time
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from pickfs.analysis.run import AnalysedRun, analyse
from pickfs.model import Plan, RunRecord
from pickfs.report.charts import ROW_PX, log_axis, speeds
from pickfs.report.colours import PALETTE
from pickfs.report.comparison import pair_runs
from pickfs.report.html import PLOTLY_FILE, chart_div, page, render_html
from pickfs.report.recommend import recommend
from pickfs.report.sections import Report, report_of
from pickfs.report.terminal import QUIET
from pickfs.report.text import factor, fmt_p, fmt_value


def _e(text: Any) -> str:
    return html.escape(str(text))


def plan_key(plan: dict[str, Any]) -> str:
    """What makes two runs runs of the same plan: the configurations' settings, the workloads' settings and the
    target's kind (not the budget, the seed or the work directory)."""
    configs = [{k: c.get(k) for k in ("name", "fstype", "mkfs_options", "mount_options", "scheduler")}
               for c in plan.get("configs", [])]
    workloads = [{k: w.get(k) for k in ("name", "label", "settings")} for w in plan.get("workloads", [])]
    text = json.dumps({"target": plan.get("target", {}).get("kind"), "configs": configs, "workloads": workloads},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def plan_words(plan: Plan) -> str:
    """The plan in a few words: its workloads on its configurations."""
    configs = ", ".join(c.name for c in plan.configs)
    workloads = ", ".join(w.label for w in plan.workloads)
    return f"{workloads} on {configs}"


def run_file(record: RunRecord) -> str:
    return f"run-{record.id}.html"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def groups(runs: Sequence[AnalysedRun]) -> dict[str, list[AnalysedRun]]:
    """Runs by plan, oldest first; only plans run more than once."""
    out: dict[str, list[AnalysedRun]] = {}
    for r in sorted(runs, key=lambda r: r.record.created):
        out.setdefault(plan_key(r.record.plan), []).append(r)
    return {k: v for k, v in out.items() if len(v) > 1}


def comparison_chart(runs: Sequence[AnalysedRun], label: str) -> go.Figure | None:
    """One workload over the runs of a plan: each configuration's speed against the baseline, one colour per run."""
    fig = go.Figure()
    lows, highs = [], []
    for i, run in enumerate(runs):
        rec = run.record
        view = next((v for v in run.views if v.label == label), None)
        if view is None:
            continue
        pts = [(r.cell.config.name, s) for r, s in speeds(view)]
        if not pts:
            continue
        lows.append(min(s[1] for _, s in pts))
        highs.append(max(s[2] for _, s in pts))
        fig.add_trace(go.Scatter(
            x=[s[0] for _, s in pts], y=[n for n, _ in pts], mode="markers", name=f"{rec.id} ({_when(rec.created)})",
            orientation="h",
            marker={"size": 11, "color": PALETTE[i % len(PALETTE)]},
            error_x={"type": "data", "symmetric": False, "array": [s[2] - s[0] for _, s in pts],
                     "arrayminus": [s[0] - s[1] for _, s in pts]},
            hovertext=[f"{rec.id}: {n} {factor(s[0])} as fast" for n, s in pts], hoverinfo="text"))
    if not fig.data:
        return None
    configs = {n for t in fig.data for n in t.y}
    fig.add_vline(x=1, line_width=1.5)
    fig.update_xaxes(**log_axis(min(lows), max(highs)), title_text="speed relative to each run's baseline "
                                                                      "(log scale; right is faster)")
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_layout(template="plotly_white", title=f"{label}: each run's ratios, 95% intervals",
                      height=max(300, 200 + ROW_PX * len(configs) * len(fig.data) // 2), margin={"l": 170, "t": 110},
                      scattermode="group", scattergap=0.4,  # each run on its own line within a configuration's row
                      legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0})
    return fig


def comparison_page(runs: Sequence[AnalysedRun]) -> str:
    """Runs of one plan: the recommendations run by run, a chart per workload, and each run against the one before."""
    first = runs[0].plan
    parts = [f"<p><a href=index.html>all runs</a></p><h1>{_e(plan_words(first))}</h1>",
             f"<p class=dim>{len(runs)} runs of the same plan, oldest first.</p>"]
    labels = [w.label for w in first.workloads]
    for label in labels:
        parts.append(f"<h2>{_e(label)}</h2><ul>")
        for run in runs:
            rec = run.record
            view = next((v for v in run.views if v.label == label), None)
            text = " ".join(recommend(view)) if view is not None and view.measured else "nothing measured"
            parts.append(f"<li><a href='{_e(run_file(rec))}'>{_e(rec.id)}</a> ({_e(rec.host.get('hostname', '?'))}, "
                         f"{_when(rec.created)}): {_e(text)}</li>")
        parts.append("</ul>")
        fig = comparison_chart(runs, label)
        if fig is not None:
            parts.append(chart_div(fig, "comparison"))
    for run_a, run_b in pairwise(runs):
        a, b = run_a.record, run_b.record
        rows = []
        for p in pair_runs(run_a, run_b):
            c = p.comparison
            def med(r: Any) -> str:
                s = r.primary.summary if r else None
                return fmt_value(s.median, r.primary.metric) if s else ("(not in run)" if r is None else r.status)
            if c is None:
                what = "only in one run" if p.a is None or p.b is None else "too few runs"
            else:
                higher = p.a.primary.metric.higher_is_better if p.a else True  # compared: both are there
                s = c.ratio if higher else 1 / c.ratio
                what = f"{factor(s)} as fast in B" + (f", {fmt_p(c.p)}" if c.p < 0.05 else f" (not significant, p={c.p:.2f})")
            rows.append(f"<tr><td>{_e(p.workload)}</td><td>{_e(p.config)}</td><td class=num>{_e(med(p.a))}</td>"
                        f"<td class=num>{_e(med(p.b))}</td><td>{_e(what)}</td></tr>")
        parts.append(f"<h2>{_e(b.id)} against {_e(a.id)}</h2><table><tr><th>workload</th><th>configuration</th>"
                     f"<th>A median</th><th>B median</th><th>B against A</th></tr>{''.join(rows)}</table>")
    return page(f"pickfs: {plan_words(first)}", "\n".join(parts), plotly=PLOTLY_FILE)


def answers(report: Report) -> str:
    """Each workload's answer in a few words, as --quiet says it (QUIET), as HTML: 'sqlite-tpcb: ext4'."""
    return "<br>".join(_e(x) for x in QUIET.render(report)) or "nothing measured"


def index_page(reports: Sequence[Report], plans: dict[str, list[AnalysedRun]]) -> str:
    rows = []
    for report in sorted(reports, key=lambda r: -r.analysis.record.created):
        run = report.analysis
        rec = run.record
        key = plan_key(rec.plan)
        compared = f" (<a href='plan-{key}.html'>compare {len(plans[key])} runs</a>)" if key in plans else ""
        rows.append(f"<tr><td class=nowrap><a href='{_e(run_file(rec))}'>{_e(rec.id)}</a></td>"
                    f"<td class=nowrap>{_when(rec.created)}</td>"
                    f"<td>{_e(rec.host.get('hostname', '?'))}</td><td>{_e(rec.status)}</td>"
                    f"<td>{_e(plan_words(run.plan))}{compared}</td><td class=answer>{answers(report)}</td></tr>")
    body = ("<h1>pickfs runs</h1><table><tr><th>run</th><th>date</th><th>host</th><th>status</th><th>plan</th>"
            "<th>answer</th></tr>"
            + "".join(rows) + "</table>")
    return page("pickfs runs", body, plotly=None)


def build_site(records: Sequence[RunRecord]) -> dict[str, str]:
    """File name -> content, for every page of the site; each run analysed and its tables built once, for all its
    pages."""
    reports = [report_of(analyse(r)) for r in records]
    plans = groups([r.analysis for r in reports])
    files = {"index.html": index_page(reports, plans), PLOTLY_FILE: get_plotlyjs()}
    for report in reports:
        body = render_html(report, plotly=PLOTLY_FILE)
        files[run_file(report.analysis.record)] = body.replace("<h1>", "<p><a href=index.html>all runs</a></p><h1>", 1)
    for key, same in plans.items():
        files[f"plan-{key}.html"] = comparison_page(same)
    return files
