"""Machines compared (pure): a fleet run's hosts side by side, per workload and configuration.

For each workload: every configuration's median and score (against that host's own baseline = 100)
on every host; whether the hosts order the configurations the same way; which hosts differ
significantly on a configuration (the same configuration, one host against another: an unpaired test
on the logarithms, Holm-corrected over every configuration and pair of hosts); and the differences in
the storage stack between the hosts (`pickfs env diff` of their stored fingerprints, storage first) that
would explain them. R2's dev box and CI box come out as `mount.fstype ext3 -> ext4`.
"""

from __future__ import annotations

import html
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rich.console import Group
from rich.table import Table
from rich.text import Text

from pickfs.analysis.run import AnalysedRun, analyse
from pickfs.model import MetricDef, RunRecord
from pickfs.report.envdiff import Difference, diff
from pickfs.report.json_text import strict_json
from pickfs.report.text import fmt_p, fmt_value
from pickfs.stats.compare import ALPHA, Comparison, compare, holm

SHOWN_DIFFS = 8  # storage differences listed per pair of hosts


class FleetHostRecord(Protocol):
    """What the view reads of a fleet's host as the store keeps it (store/fleets.py's FleetHost)."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str: ...
    @property
    def run_id(self) -> str | None: ...


class FleetRunRecord(Protocol):
    """What the view reads of a fleet run as the store keeps it (store/fleets.py's FleetRecord)."""

    @property
    def id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def created(self) -> float: ...
    @property
    def hosts(self) -> Sequence[FleetHostRecord]: ...


@dataclass(frozen=True)
class HostCell:
    median: float | None
    score: float | None  # against the host's own baseline = 100
    values: tuple[float, ...] = ()
    status: str = "ok"


@dataclass(frozen=True)
class HostDifference:
    config: str
    host_a: str
    host_b: str
    comparison: Comparison  # b against a
    p_adjusted: float

    @property
    def significant(self) -> bool:
        return self.p_adjusted < ALPHA


@dataclass(frozen=True)
class WorkloadFleetView:
    label: str
    metric: MetricDef
    baseline: str | None
    configs: tuple[str, ...]
    hosts: tuple[str, ...]
    cells: dict[tuple[str, str], HostCell]
    rankings: dict[str, tuple[str, ...]]  # host -> configurations, best first (by median)
    differences: tuple[HostDifference, ...]

    @property
    def agree(self) -> bool:
        """Do the hosts order the configurations measured on all of them the same way?"""
        common = [c for c in self.configs if all(c in r for r in self.rankings.values())]
        orders = {tuple(c for c in r if c in common) for r in self.rankings.values()}
        return len(orders) <= 1

    @property
    def same_winner(self) -> bool:
        return len({r[0] for r in self.rankings.values() if r}) <= 1


@dataclass(frozen=True)
class FleetView:
    fleet_id: str
    status: str
    created: float
    hosts: tuple[tuple[str, str, str, str | None], ...]  # name, status, error, run id
    workloads: tuple[WorkloadFleetView, ...]
    env_diffs: dict[tuple[str, str], tuple[Difference, ...]] = field(default_factory=dict)

    def storage_diffs(self, a: str, b: str) -> tuple[Difference, ...]:
        return tuple(d for d in self.env_diffs.get((a, b), ()) if d.storage)


def _workload(label: str, runs: dict[str, AnalysedRun]) -> WorkloadFleetView | None:
    cells: dict[tuple[str, str], HostCell] = {}
    configs: list[str] = []
    metric: MetricDef | None = None
    baseline = None
    rankings: dict[str, tuple[str, ...]] = {}
    for host, run in runs.items():
        view = next((v for v in run.views if v.label == label), None)
        if view is None:
            continue
        baseline = baseline or view.baseline
        ranked = []
        for row in view.rows:
            name = row.cell.config.name
            if name not in configs:
                configs.append(name)
            s = row.primary.summary
            metric = metric or row.primary.metric
            cells[(name, host)] = HostCell(s.median if s else None, row.relative, row.primary.values, row.status)
            if s:
                ranked.append((s.median, name))
        higher = metric.higher_is_better if metric else True
        rankings[host] = tuple(n for _, n in sorted(ranked, reverse=higher))
    if metric is None:
        return None
    hosts = tuple(h for h in runs if h in rankings)
    raw: list[tuple[str, str, str, Comparison]] = []
    for config in configs:
        for a, b in itertools.combinations(hosts, 2):
            ca, cb = cells.get((config, a)), cells.get((config, b))
            c = compare(cb.values, ca.values) if ca and cb else None
            if c is not None:
                raw.append((config, a, b, c))
    adjusted = holm([c.p for *_, c in raw]) if raw else []
    diffs = tuple(HostDifference(cfg, a, b, c, p) for (cfg, a, b, c), p in zip(raw, adjusted, strict=True))
    return WorkloadFleetView(label, metric, baseline, tuple(configs), hosts, cells, rankings, diffs)


def build_fleet_view(fleet: FleetRunRecord, records: dict[str, RunRecord]) -> FleetView:
    """`records`: each host's run by inventory name, in the fleet's host order."""
    labels: list[str] = []
    for record in records.values():
        for w in record.plan.get("workloads", []):
            if w["label"] not in labels:
                labels.append(w["label"])
    runs = {host: analyse(record) for host, record in records.items()}  # each host's run analysed once
    workloads = tuple(w for w in (_workload(label, runs) for label in labels) if w is not None)
    names = list(records)
    env: dict[tuple[str, str], tuple[Difference, ...]] = {}
    for a, b in itertools.combinations(names, 2):
        fa, fb = records[a].host.get("fingerprint") or {}, records[b].host.get("fingerprint") or {}
        env[(a, b)] = tuple(diff(fa, fb))
    hosts = tuple((h.name, h.status, h.error, h.run_id) for h in fleet.hosts)
    return FleetView(fleet.id, fleet.status, fleet.created, hosts, workloads, env)


# -- texts shared by the terminal and the HTML -------------------------------------------------
def ranking_line(w: WorkloadFleetView) -> str:
    order = "; ".join(f"{h}: {' > '.join(r)}" for h, r in w.rankings.items())
    if w.agree:
        first = next(iter(w.rankings.values()), ())
        return f"ranking: the hosts agree ({' > '.join(first)}, by median)"
    winner = "the same fastest" if w.same_winner else "different fastest configurations"
    return f"ranking: the hosts disagree, with {winner} ({order})"


def difference_lines(view: FleetView, w: WorkloadFleetView) -> list[str]:
    out = []
    for d in w.differences:
        if not d.significant:
            continue
        c = d.comparison
        cause = view.storage_diffs(d.host_a, d.host_b)
        why = f"; storage differs first in {cause[0].key} {cause[0].a} -> {cause[0].b}" if cause else ""
        out.append(f"{d.config}: {d.host_b} is x{c.ratio:.2f} [{c.ci_low:.2f}-{c.ci_high:.2f}] of {d.host_a} "
                   f"({fmt_p(d.p_adjusted)}, Holm){why}")
    if not out:
        tested = len(w.differences)
        out.append(f"no host differs significantly from another on any configuration ({tested} comparison(s))"
                   if tested else "too few values to compare the hosts")
    return out


def env_lines(view: FleetView, a: str, b: str) -> list[str]:
    diffs = view.env_diffs.get((a, b), ())
    storage = [d for d in diffs if d.storage][:SHOWN_DIFFS]
    if not diffs:
        return [f"{a} -> {b}: no difference in the storage stack"]
    lines = [f"{d.key}: {d.a if d.a is not None else '(absent)'} -> {d.b if d.b is not None else '(absent)'}"
             for d in storage]
    rest = len(diffs) - len(storage)
    if rest:
        lines.append(f"(and {rest} other difference(s): pickfs env diff RUN_A RUN_B lists them all)")
    return lines


# -- terminal ------------------------------------------------------------------------------------
def render_fleet(view: FleetView) -> Group:
    parts: list[Any] = []
    hosts = Table(title=f"fleet {view.fleet_id}: {view.status}", title_justify="left")
    for col in ("host", "status", "run", "error"):
        hosts.add_column(col)
    for name, status, error, run_id in view.hosts:
        hosts.add_row(name, Text(status, style="green" if status == "complete" else "red"), run_id or "-", error)
    parts.append(hosts)
    for w in view.workloads:
        table = Table(title=f"{w.label}: median {w.metric.unit} (score against each host's {w.baseline or 'baseline'}"
                      " = 100)", title_justify="left")
        table.add_column("configuration")
        for h in w.hosts:
            table.add_column(h, justify="right")
        for config in w.configs:
            row = [config]
            for h in w.hosts:
                cell = w.cells.get((config, h))
                if cell is None or cell.median is None:
                    row.append(cell.status if cell else "-")
                else:
                    score = f" ({cell.score:.0f})" if cell.score is not None else ""
                    row.append(fmt_value(cell.median, w.metric) + score)
            table.add_row(*row)
        parts.append(table)
        parts.append(Text(ranking_line(w)))
        parts.append(Text("hosts that differ significantly on a configuration:"))
        parts += [Text(f"  {line}") for line in difference_lines(view, w)]
    measured = [h for h, *_ in view.hosts if any(h in w.hosts for w in view.workloads)]
    for a, b in itertools.combinations(measured, 2):
        parts.append(Text(f"storage differences, {a} -> {b} (pickfs env diff, storage first):"))
        parts += [Text(f"  {line}") for line in env_lines(view, a, b)]
    return Group(*parts)


# -- HTML ----------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape(str(value))


def heatmap_figures(w: WorkloadFleetView) -> list[Any]:
    import plotly.graph_objects as go  # deferred: plotly, for --html only

    figs = []
    first = w.hosts[0] if w.hosts else None

    def against_first(c: str, h: str) -> float | None:
        """Host h's median against the first host's = 100; None where the first has none (or zero).
        Called only for a cell with a median."""
        ref = w.cells.get((c, first)) if first is not None else None
        if ref is None or not ref.median:
            return None
        median = w.cells[(c, h)].median
        return None if median is None else 100.0 * median / ref.median

    for title, value in (
        (f"score against each host's {w.baseline} = 100", lambda c, h: w.cells[(c, h)].score),
        (f"each host against {first} = 100 (same configuration)", against_first),
    ):
        z, text = [], []
        for c in w.configs:
            zr, tr = [], []
            for h in w.hosts:
                cell = w.cells.get((c, h))
                v = value(c, h) if cell is not None and cell.median is not None else None
                zr.append(v)
                tr.append("-" if v is None or cell is None  # cell is not None whenever v is not None
                          else f"{v:.0f}<br>{fmt_value(cell.median, w.metric)} {w.metric.unit}")
            z.append(zr)
            text.append(tr)
        # coloured on a log scale around 100, so a 16x outlier does not wash out a 10% difference
        logz = [[None if v is None or v <= 0 else math.log2(v / 100.0) for v in zr] for zr in z]
        ticks = [-3, -2, -1, 0, 1, 2, 3]
        fig = go.Figure(go.Heatmap(z=logz, x=list(w.hosts), y=list(w.configs), text=text, texttemplate="%{text}",
                                   hoverinfo="text", zmid=0, zmin=-3, zmax=3,
                                   colorscale="RdYlGn" if w.metric.higher_is_better else "RdYlGn_r",
                                   colorbar={"title": "score", "tickvals": ticks,
                                             "ticktext": [f"{100 * 2 ** t:g}" for t in ticks]}))
        fig.update_layout(title=f"{w.label}: {title}", xaxis_title="host", yaxis_title="configuration")
        figs.append(fig)
    return figs


def render_fleet_html(view: FleetView) -> str:
    from pickfs.report.html import chart_html, page  # deferred: plotly, for --html only

    parts = [f"<h1>pickfs fleet {_e(view.fleet_id)}</h1>",
             f"<p class=dim>{_e(time.strftime('%Y-%m-%d %H:%M', time.localtime(view.created)))}, "
             f"{len(view.hosts)} host(s), status {_e(view.status)}</p>",
             "<h2>Hosts</h2><table><tr><th>host</th><th>status</th><th>run</th><th>error</th></tr>"]
    for name, status, error, run_id in view.hosts:
        tone = "good" if status == "complete" else "bad"
        parts.append(f"<tr><td>{_e(name)}</td><td class={tone}>{_e(status)}</td><td>{_e(run_id or '-')}</td>"
                     f"<td>{_e(error)}</td></tr>")
    parts.append("</table>")
    for w in view.workloads:
        parts.append(f"<h2>{_e(w.label)}: machines compared</h2>")
        parts.append(f"<table><tr><th>configuration</th>{''.join(f'<th>{_e(h)}</th>' for h in w.hosts)}</tr>")
        for c in w.configs:
            cells = []
            for h in w.hosts:
                cell = w.cells.get((c, h))
                if cell is None or cell.median is None:
                    cells.append(f"<td class=dim>{_e(cell.status if cell else '-')}</td>")
                else:
                    score = f" ({cell.score:.0f})" if cell.score is not None else ""
                    cells.append(f"<td class=num>{_e(fmt_value(cell.median, w.metric))} {_e(w.metric.unit)}"
                                 f"{_e(score)}</td>")
            parts.append(f"<tr><td>{_e(c)}</td>{''.join(cells)}</tr>")
        parts.append("</table>")
        parts.append(f"<p class=rec>{_e(ranking_line(w))}</p>")
        parts.append("<p>Hosts that differ significantly on a configuration:</p><ul>"
                     + "".join(f"<li>{_e(line)}</li>" for line in difference_lines(view, w)) + "</ul>")
        parts += [chart_html(fig, "heatmap") for fig in heatmap_figures(w)]
    measured = [h for h, *_ in view.hosts if any(h in w.hosts for w in view.workloads)]
    for a, b in itertools.combinations(measured, 2):
        parts.append(f"<h2>Storage differences, {_e(a)} -&gt; {_e(b)}</h2><div class=why>"
                     + _e("\n".join(env_lines(view, a, b))) + "</div>")
    return page(f"pickfs fleet {view.fleet_id}", "\n".join(parts))


def render_fleet_json(view: FleetView) -> str:
    doc = {
        "schema": "pickfs.fleet/1", "id": view.fleet_id, "status": view.status,
        "hosts": [{"name": n, "status": s, "error": e, "run": r} for n, s, e, r in view.hosts],
        "workloads": [{
            "label": w.label, "metric": w.metric.name, "unit": w.metric.unit, "baseline": w.baseline,
            "cells": [{"config": c, "host": h, "median": w.cells[(c, h)].median, "score": w.cells[(c, h)].score}
                      for c in w.configs for h in w.hosts if (c, h) in w.cells],
            "rankings": {h: list(r) for h, r in w.rankings.items()}, "hosts_agree": w.agree,
            "differences": [{"config": d.config, "a": d.host_a, "b": d.host_b, "ratio": d.comparison.ratio,
                             "ci": [d.comparison.ci_low, d.comparison.ci_high], "p_adjusted": d.p_adjusted,
                             "significant": d.significant} for d in w.differences],
        } for w in view.workloads],
        "storage_differences": {f"{a} -> {b}": [{"key": d.key, "a": d.a, "b": d.b, "storage": d.storage} for d in ds]
                                for (a, b), ds in view.env_diffs.items()},
    }
    return strict_json(doc, indent=1)
