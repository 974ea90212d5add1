"""Two runs side by side (pure): matching cells, ratios and significance; unmatched cells listed."""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from pickfs.model import RunRecord
from pickfs.report.text import fmt_value
from pickfs.report.views import Row, build_views
from pickfs.stats.compare import Comparison, compare


@dataclass(frozen=True)
class CellPair:
    config: str
    workload: str
    a: Row | None
    b: Row | None
    comparison: Comparison | None  # b against a


def pair_runs(a: RunRecord, b: RunRecord) -> list[CellPair]:
    rows_a = {(r.cell.config.name, v.label): r for v in build_views(a) for r in v.rows}
    rows_b = {(r.cell.config.name, v.label): r for v in build_views(b) for r in v.rows}
    keys = list(rows_a) + [k for k in rows_b if k not in rows_a]
    out = []
    for key in keys:
        ra, rb = rows_a.get(key), rows_b.get(key)
        c = compare(rb.primary.values, ra.primary.values) if ra and rb else None
        out.append(CellPair(key[0], key[1], ra, rb, c))
    return out


def comparison_table(a: RunRecord, b: RunRecord) -> Table:
    table = Table(title=f"A = {a.id} ({a.host.get('hostname', '?')}), B = {b.id} ({b.host.get('hostname', '?')})",
                  title_justify="left")
    for col in ("configuration", "workload", "A median", "B median", "B / A", "significance"):
        table.add_column(col, justify="right" if "median" in col or "/" in col else "left")
    for p in pair_runs(a, b):
        def med(r: Row | None) -> str:
            if r is None:
                return "(not in run)"
            s = r.primary.summary
            return fmt_value(s.median, r.primary.metric) + f" {r.primary.metric.unit}" if s else r.status
        c = p.comparison
        if c is None:
            ratio, verdict = "-", Text("only in one run" if p.a is None or p.b is None else "too few runs", style="dim")
        else:
            ratio = f"{c.ratio:.2f} [{c.ci_low:.2f}-{c.ci_high:.2f}]"
            verdict = (Text(f"different, p={c.p:.3f}", style="bold") if c.p < 0.05
                       else Text(f"no significant difference (p={c.p:.2f})", style="dim"))
        if p.a and p.b and (p.a.cell.config != p.b.cell.config or p.a.cell.workload != p.b.cell.workload):
            verdict.append(" (settings differ between the runs)", style="yellow")
        table.add_row(p.config, p.workload, med(p.a), med(p.b), ratio, verdict)
    return table
