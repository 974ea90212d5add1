"""Two runs side by side (pure): matching cells, ratios and significance; the settings that differ
between matched cells, named; each run's ranking side by side; unmatched cells listed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from pickfs.analysis.run import AnalysedRun, analyse, analysed
from pickfs.analysis.views import Row
from pickfs.model import RunRecord
from pickfs.report.envdiff import diff as env_diff
from pickfs.report.text import fmt_p, fmt_with_unit
from pickfs.stats.compare import Comparison, compare

MACHINE_DIFFERENCES = 6  # storage differences between the two machines named under the table


@dataclass(frozen=True)
class CellPair:
    config: str
    workload: str
    a: Row | None
    b: Row | None
    comparison: Comparison | None  # b against a
    differences: tuple[str, ...] = ()  # settings that differ between the two runs' cells, named


def _mount_of(record: RunRecord, cell_index: int) -> dict[str, Any]:
    """The options in force as the first measured trial of a cell read them back."""
    for t in record.trials:
        if t.cell_index == cell_index and t.mount and t.mount.get("effective_options"):
            return t.mount
    return {}


def _options(mount: dict[str, Any]) -> dict[str, str]:
    out = {}
    for opt in mount.get("effective_options", ()) or ():
        key, _, value = str(opt).partition("=")
        if key in ("barrier", "nobarrier"):
            out["barrier"] = "off" if key == "nobarrier" or value == "0" else "on"
        else:
            out[key] = value or "on"
    return out


def _show(value: Any) -> str:
    if value is None or value == [] or value == ():
        return "(unset)"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def setting_differences(a: Row, b: Row, mount_a: dict[str, Any], mount_b: dict[str, Any]) -> list[str]:
    """What differs between the same cell in two runs, each named 'what: A -> B' (pure)."""
    out = []
    sa, sb = a.cell.config.settings(), b.cell.config.settings()
    for key in ("fstype", "mkfs_options", "mount_options", "scheduler"):
        if sa.get(key) != sb.get(key):
            out.append(f"{key.replace('_', ' ')}: {_show(sa.get(key))} -> {_show(sb.get(key))}")
    wa, wb = dict(a.cell.workload.settings), dict(b.cell.workload.settings)
    if a.cell.workload.name != b.cell.workload.name:
        out.append(f"workload: {a.cell.workload.name} -> {b.cell.workload.name}")
    for key in sorted(set(wa) | set(wb)):
        if wa.get(key) != wb.get(key):
            out.append(f"{key}: {_show(wa.get(key))} -> {_show(wb.get(key))}")
    oa, ob = _options(mount_a), _options(mount_b)
    if oa and ob:
        for key in sorted(set(oa) | set(ob)):
            if oa.get(key) != ob.get(key):
                out.append(f"in force {key}: {oa.get(key, '(absent)')} -> {ob.get(key, '(absent)')}")
    return out


def pair_runs(run_a: RunRecord | AnalysedRun, run_b: RunRecord | AnalysedRun) -> list[CellPair]:
    analysis_a, analysis_b = analysed(run_a), analysed(run_b)
    a, b = analysis_a.record, analysis_b.record
    rows_a = {(r.cell.config.name, v.label): r for v in analysis_a.views for r in v.rows}
    rows_b = {(r.cell.config.name, v.label): r for v in analysis_b.views for r in v.rows}
    keys = list(rows_a) + [k for k in rows_b if k not in rows_a]
    out = []
    for key in keys:
        ra, rb = rows_a.get(key), rows_b.get(key)
        c = compare(rb.primary.values, ra.primary.values) if ra and rb else None
        diffs = setting_differences(ra, rb, _mount_of(a, ra.cell.index), _mount_of(b, rb.cell.index)) \
            if ra and rb else []
        out.append(CellPair(key[0], key[1], ra, rb, c, tuple(diffs)))
    return out


@dataclass(frozen=True)
class Ranking:
    workload: str
    a: tuple[tuple[str, str], ...]  # (configuration, median as shown), best first
    b: tuple[tuple[str, str], ...]


def _ranked(rows: list[Row]) -> tuple[tuple[str, str], ...]:
    measured = [r for r in rows if r.primary.summary is not None]
    if not measured:
        return ()
    better_high = measured[0].primary.metric.higher_is_better
    measured.sort(key=lambda r: r.primary.summary.median if r.primary.summary else 0.0, reverse=better_high)
    return tuple((r.cell.config.name, fmt_with_unit(r.primary.summary.median if r.primary.summary else None,
                                                    r.primary.metric)) for r in measured)


def rankings(a: RunRecord | AnalysedRun, b: RunRecord | AnalysedRun) -> list[Ranking]:
    """Each workload's configurations ranked best first by their median, in each run (pure)."""
    views_a = {v.label: list(v.rows) for v in analysed(a).views}
    views_b = {v.label: list(v.rows) for v in analysed(b).views}
    labels = list(views_a) + [x for x in views_b if x not in views_a]
    return [Ranking(x, _ranked(views_a.get(x, [])), _ranked(views_b.get(x, []))) for x in labels]


def machine_differences(a: RunRecord, b: RunRecord) -> list[str]:
    """The storage differences between the two runs' machines, most telling first (pure)."""
    fa, fb = a.host.get("fingerprint") or {}, b.host.get("fingerprint") or {}
    if not fa or not fb:
        return []
    return [f"{d.key}: {d.a if d.a is not None else '(absent)'} -> {d.b if d.b is not None else '(absent)'}"
            for d in env_diff(fa, fb) if d.storage][:MACHINE_DIFFERENCES]


def comparison_table(run_a: RunRecord | AnalysedRun, run_b: RunRecord | AnalysedRun) -> Table:
    a, b = analysed(run_a), analysed(run_b)
    return _comparison_table(a, b)


def _comparison_table(run_a: AnalysedRun, run_b: AnalysedRun) -> Table:
    a, b = run_a.record, run_b.record
    table = Table(title=f"A = {a.id} ({a.host.get('hostname', '?')}), B = {b.id} ({b.host.get('hostname', '?')})",
                  title_justify="left")
    for col in ("configuration", "workload", "A median", "B median", "B / A", "significance"):
        table.add_column(col, justify="right" if "median" in col or "/" in col else "left")
    for p in pair_runs(run_a, run_b):
        def med(r: Row | None) -> str:
            if r is None:
                return "(not in run)"
            s = r.primary.summary
            return fmt_with_unit(s.median, r.primary.metric) if s else r.status
        c = p.comparison
        if c is None:
            ratio, verdict = "-", Text("only in one run" if p.a is None or p.b is None else "too few runs", style="dim")
        else:
            ratio = f"{c.ratio:.2f} [{c.ci_low:.2f}-{c.ci_high:.2f}]"
            verdict = (Text(f"different, {fmt_p(c.p)}", style="bold") if c.p < 0.05
                       else Text(f"no significant difference (p={c.p:.2f})", style="dim"))
        if p.differences:
            verdict.append(f" (settings differ: {'; '.join(p.differences)})", style="yellow")
        table.add_row(p.config, p.workload, med(p.a), med(p.b), ratio, verdict)
    return table


def ranking_table(r: Ranking) -> Table:
    table = Table(title=f"{r.workload}: ranking in each run, best first", title_justify="left")
    for col in ("rank", "A", "B"):
        table.add_column(col, justify="right" if col == "rank" else "left")
    for i in range(max(len(r.a), len(r.b))):
        cell_a = f"{r.a[i][0]} ({r.a[i][1]})" if i < len(r.a) else ""
        cell_b = f"{r.b[i][0]} ({r.b[i][1]})" if i < len(r.b) else ""
        table.add_row(str(i + 1), cell_a, cell_b)
    return table


def comparison_report(a: RunRecord, b: RunRecord) -> Group:
    """The whole `pickfs compare` output: matched cells, rankings side by side, the machines' differences."""
    run_a, run_b = analyse(a), analyse(b)  # each run analysed once, for every table
    parts: list[Any] = [comparison_table(run_a, run_b)]
    parts += [ranking_table(r) for r in rankings(run_a, run_b) if r.a or r.b]
    machines = machine_differences(a, b)
    if machines:
        parts.append(Text("the machines' storage stacks differ in: " + "; ".join(machines), style="yellow"))
    return Group(*parts)
