"""Concurrency as a dimension: throughput and p99 latency against clients, per configuration (pure).

A plan's `clients = [1, 2, 4, 8]` runs every server workload once per count, labelled `LABEL-cN`.
Here those workloads of the analysed run are put back together: for each configuration, the median throughput and
the median p99 latency of its measured runs at each count, as a text table and an SVG chart
(two panels, one line per configuration), so one sees where each filesystem stops scaling.
"""

from __future__ import annotations

import html
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pickfs.analysis.views import WorkloadView
from pickfs.report.colours import PALETTE

_LABEL = re.compile(r"^(?P<base>.+)-c(?P<n>\d+)$")
COUNT_KEYS = ("clients", "threads")
P99 = "lat_p99"


@dataclass(frozen=True)
class ScalingPoint:
    config: str
    clients: int
    throughput: float | None  # median of the measured runs' primary metric
    p99: float | None  # median of their p99 latencies, seconds
    runs: int


@dataclass(frozen=True)
class Scaling:
    label: str  # the workload's label without -cN
    metric: str
    unit: str
    points: tuple[ScalingPoint, ...]

    def configs(self) -> list[str]:
        return list(dict.fromkeys(p.config for p in self.points))

    def counts(self) -> list[int]:
        return sorted({p.clients for p in self.points})


def _count(settings: dict[str, Any], n: int) -> bool:
    return any(settings.get(k) == n for k in COUNT_KEYS)


def scaling_data(views: Sequence[WorkloadView]) -> list[Scaling]:
    """Every workload run at two or more client counts, with its points per configuration and count: the figures
    of the analysed run's views (the primary figure and the p99 of each row), never the stored plan again."""
    groups: dict[str, list[tuple[int, WorkloadView]]] = {}
    for view in views:
        m = _LABEL.match(view.label)
        if m and _count(view.settings, int(m.group("n"))):
            groups.setdefault(m.group("base"), []).append((int(m.group("n")), view))
    out = []
    for base, members in groups.items():
        if len({n for n, _ in members}) < 2 or not members[0][1].rows:
            continue
        metric = members[0][1].rows[0].primary.metric
        configs = list(dict.fromkeys(r.cell.config.name for _, v in members for r in v.rows))
        points = []
        for config in configs:
            for n, view in sorted(members, key=lambda x: x[0]):
                row = next((r for r in view.rows if r.cell.config.name == config), None)
                values = row.primary.values if row is not None else ()
                p99 = row.metric(P99) if row is not None else None
                p99s = p99.values if p99 is not None else ()
                points.append(ScalingPoint(config, n, statistics.median(values) if values else None,
                                           statistics.median(p99s) if p99s else None, len(values)))
        out.append(Scaling(base, metric.name, metric.unit, tuple(points)))
    return out


def _num(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.2f} ms"


def scaling_table(s: Scaling) -> list[str]:
    """A workload's table: a title line, then a row per configuration, throughput / p99 per client count."""
    counts = s.counts()
    head = ["configuration", *(f"{n} client{'s' if n > 1 else ''}" for n in counts), "best at"]
    rows = [head]
    for config in s.configs():
        by_n = {p.clients: p for p in s.points if p.config == config}
        cells = [f"{_num(by_n[n].throughput)} / {_ms(by_n[n].p99)}" if n in by_n else "-" for n in counts]
        best = max((p for p in by_n.values() if p.throughput is not None), key=lambda p: p.throughput or 0.0,
                   default=None)
        rows.append([config, *cells, f"{best.clients}" if best else "-"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [f"{s.label}: {s.metric} ({s.unit}) / p99 latency, median per configuration, against clients"]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
              for r in rows]
    return lines


def scaling_text(scalings: Sequence[Scaling]) -> str:
    """One table per workload, blank lines between ('' when none)."""
    return "\n\n".join("\n".join(scaling_table(s)) for s in scalings)


def _panel(s: Scaling, pick: str, x0: float, title: str, scale: float = 1.0) -> list[str]:
    """One panel of the chart: a line per configuration, value against clients (log-2 spaced)."""
    w, h, pad = 420.0, 260.0, 44.0
    counts = s.counts()
    values = [getattr(p, pick) for p in s.points if getattr(p, pick) is not None]
    top = max(values, default=1.0) * scale * 1.1 or 1.0
    xs = {n: x0 + pad + i * (w - 2 * pad) / max(1, len(counts) - 1) for i, n in enumerate(counts)}
    out = [f'<text x="{x0 + w / 2}" y="16" text-anchor="middle" font-size="13">{html.escape(title)}</text>',
           f'<line x1="{x0 + pad}" y1="{h - pad}" x2="{x0 + w - pad}" y2="{h - pad}" stroke="#adb5bd"/>',
           f'<line x1="{x0 + pad}" y1="{pad - 10}" x2="{x0 + pad}" y2="{h - pad}" stroke="#adb5bd"/>',
           f'<text x="{x0 + pad - 4}" y="{pad - 6}" text-anchor="end" font-size="10">{top:,.3g}</text>']
    for n, x in xs.items():
        out.append(f'<text x="{x}" y="{h - pad + 14}" text-anchor="middle" font-size="10">{n}</text>')
    out.append(f'<text x="{x0 + w / 2}" y="{h - 8}" text-anchor="middle" font-size="11">clients</text>')
    for k, config in enumerate(s.configs()):
        pts = [(xs[p.clients], h - pad - (getattr(p, pick) * scale / top) * (h - 2 * pad + 10))
               for p in sorted(s.points, key=lambda p: p.clients) if p.config == config and getattr(p, pick) is not None]
        color = PALETTE[k % len(PALETTE)]
        if len(pts) > 1:
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                       + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in pts]
    return out


def scaling_html(scalings: Sequence[Scaling]) -> str:
    """An HTML fragment: per workload run at several client counts, an SVG of throughput and p99 against
    clients per configuration, and the table; '' when the run has no such workload."""
    parts = []
    for s in scalings:
        svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="860" height="290" role="img" '
               f'aria-label="{html.escape(s.label)}: throughput and p99 latency against clients">']
        svg += _panel(s, "throughput", 0, f"{s.metric} ({s.unit})")
        svg += _panel(s, "p99", 430, "p99 latency (ms)", scale=1000.0)
        legend_y = 40
        for k, config in enumerate(s.configs()):
            svg.append(f'<text x="800" y="{legend_y + 14 * k}" font-size="11" fill="{PALETTE[k % len(PALETTE)]}">'
                       f'{html.escape(config)}</text>')
        svg.append("</svg>")
        table = html.escape(scaling_text_for(s))
        parts.append(f"<h2>{html.escape(s.label)}: scaling with clients</h2>{''.join(svg)}"
                     f"<pre class=why>{table}</pre>")
    return "\n".join(parts)


def scaling_text_for(s: Scaling) -> str:
    lines = []
    for config in s.configs():
        pts = sorted((p for p in s.points if p.config == config), key=lambda p: p.clients)
        lines.append(f"{config}: " + ", ".join(f"{p.clients}: {_num(p.throughput)} {s.unit}, p99 {_ms(p.p99)}"
                                               for p in pts))
    return "\n".join(lines)
