"""The HTML format (pure): report/sections.py's sections as one page, with plotly charts and plotly.js embedded or
beside it, so it works offline. plotly is loaded only where a chart is drawn (report/charts.py), so that loading the
formats' registry loads no plotly."""

from __future__ import annotations

import html
import time
from typing import TYPE_CHECKING, Any

from pickfs.analysis.latency import FixedRate
from pickfs.analysis.run import AnalysedRun
from pickfs.analysis.views import ONE_AT_A_TIME, WorkloadView
from pickfs.model import FsConfig, RunRecord
from pickfs.report.crash_text import crash_details
from pickfs.report.latency import rate_cells
from pickfs.report.race_method import resolution_line
from pickfs.report.scaling import scaling_html
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
from pickfs.report.table import CONFIGURATION, VERDICT, ResultTable
from pickfs.report.text import (
    CRASH_COLUMNS,
    breakdown_cells,
    crash_cells,
    crash_model,
    fmt_bytes,
    method_lines,
    scored,
    values_text,
)

if TYPE_CHECKING:
    import plotly.graph_objects as go

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
INLINE = "inline"
PLOTLY_FILE = "plotly.min.js"  # plotly.js as one file beside the pages that load it

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;color:#212529;
padding:0 1rem}h1{font-size:1.6rem}h2{margin-top:2.5rem;border-bottom:1px solid #dee2e6}table{border-collapse:collapse;
margin:1rem 0;font-size:.9rem}th,td{padding:.3rem .6rem;border-bottom:1px solid #e9ecef;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.risk{color:#e8590c}.dim{color:#868e96}.good{color:#2b8a3e}
.bad{color:#c92a2a}.rec{background:#f1f3f5;padding:.8rem 1rem;border-left:4px solid #2b8a3e}
.why{font-family:ui-monospace,monospace;font-size:.85rem;white-space:pre-wrap;background:#f8f9fa;padding:.6rem}
.chart{margin:.5rem 0}.nowrap{white-space:nowrap}.machine{font-size:.95rem}
"""

PROBE = """
window.pickfsErrors = [];
window.addEventListener('error', function (e) { window.pickfsErrors.push(String(e.message)); });
(function () {
  var original = console.error;
  console.error = function () {
    window.pickfsErrors.push(Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
})();
window.addEventListener('load', function () {
  setTimeout(function () {
    var charts = document.querySelectorAll('.plotly-graph-div');
    var drawn = Array.prototype.filter.call(charts, function (c) { return c.querySelector('.main-svg'); });
    document.body.setAttribute('data-charts', String(charts.length));
    document.body.setAttribute('data-charts-drawn', String(drawn.length));
    document.body.setAttribute('data-errors', window.pickfsErrors.join(' | '));
    // text labels that overlap one another, per kind of chart (the browser test reads these)
    var overlaps = {};
    document.querySelectorAll('.chart[data-chart]').forEach(function (div) {
      var kind = div.getAttribute('data-chart');
      var boxes = Array.prototype.filter.call(div.querySelectorAll('svg text'), function (t) {
        return t.textContent.trim() !== '';
      }).map(function (t) { return [t.textContent.trim(), t.getBoundingClientRect()]; })
        .filter(function (b) { return b[1].width > 0 && b[1].height > 0; });
      var found = overlaps[kind] || [];
      for (var i = 0; i < boxes.length; i++) {
        for (var j = i + 1; j < boxes.length; j++) {
          var a = boxes[i][1], b = boxes[j][1];
          var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
          var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
          if (w > 1 && h > 1) { found.push(boxes[i][0] + ' / ' + boxes[j][0]); }
        }
      }
      overlaps[kind] = found;
    });
    document.body.setAttribute('data-overlaps', JSON.stringify(overlaps));
    // per chart: each axis's tick labels in axis order, legends that overflow, error bars outside the plot
    var charts_found = [];
    document.querySelectorAll('.chart[data-chart]').forEach(function (div) {
      var found = {kind: div.getAttribute('data-chart'), axes: [], legend_overflow: false, bars_outside: 0};
      div.querySelectorAll('.xaxislayer-above, .yaxislayer-above').forEach(function (layer) {
        var isx = layer.classList.contains('xaxislayer-above');
        var ticks = Array.prototype.map.call(layer.querySelectorAll('text'), function (t) {
          var r = t.getBoundingClientRect();
          return [isx ? r.left + r.width / 2 : -(r.top + r.height / 2), t.textContent.trim()];
        }).filter(function (t) { return t[1] !== ''; });
        ticks.sort(function (a, b) { return a[0] - b[0]; });
        found.axes.push({x: isx, labels: ticks.map(function (t) { return t[1]; })});
      });
      var svg = div.querySelector('.main-svg');
      var legend = div.querySelector('.legend');
      if (svg && legend) {
        var s = svg.getBoundingClientRect(), l = legend.getBoundingClientRect();
        var bar = legend.querySelector('.scrollbar');
        var scrolls = bar && bar.getBoundingClientRect().height > 0;
        found.legend_overflow = scrolls || l.left < s.left - 1 || l.right > s.right + 1 || l.top < s.top - 1
          || l.bottom > s.bottom + 1;
      }
      var plot = div.querySelector('.nsewdrag');
      if (plot) {
        var p = plot.getBoundingClientRect();
        div.querySelectorAll('g.errorbar path').forEach(function (e) {
          var b = e.getBoundingClientRect();
          if (b.width === 0 && b.height === 0) { return; }
          if (b.left < p.left - 1 || b.right > p.right + 1) { found.bars_outside += 1; }
        });
      }
      charts_found.push(found);
    });
    document.body.setAttribute('data-chart-facts', JSON.stringify(charts_found));
    var rec = document.querySelector('.rec');
    if (rec) { document.body.setAttribute('data-rec-bottom', String(Math.round(rec.getBoundingClientRect().bottom))); }
    document.body.setAttribute('data-window-height', String(window.innerHeight));
  }, 300);
});
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


SIGNIFICANT = 4  # digits kept of every figure drawn: enough for a chart, a fraction of the page


def _rounded(values: Any) -> Any:
    if values is None or isinstance(values, str):
        return values
    try:
        items = list(values)
    except TypeError:
        return values
    if not items or not all(isinstance(v, float) for v in items):
        return values
    return [float(f"{v:.{SIGNIFICANT}g}") for v in items]


def round_data(fig: go.Figure) -> go.Figure:
    """Every trace's coordinates and error bars to SIGNIFICANT digits (a chart shows no more)."""
    for trace in fig.data:
        for attr in ("x", "y"):
            if hasattr(trace, attr):
                trace[attr] = _rounded(trace[attr])
        for bar in ("error_x", "error_y"):
            err = getattr(trace, bar, None)
            if err is not None and err.array is not None:
                err.array = _rounded(err.array)
                err.arrayminus = _rounded(err.arrayminus)
    return fig


def chart_div(fig: go.Figure, kind: str) -> str:
    """A figure as it stands, in the page's chart box (`kind` names it for the browser test)."""
    body = fig.to_html(full_html=False, include_plotlyjs=False, config=PLOTLY_CONFIG)
    return f'<div class="chart" data-chart="{_e(kind)}">{body}</div>'


def chart_html(fig: go.Figure, kind: str) -> str:
    """A figure in the report's style (its figures rounded, the white template, room for the labels), boxed."""
    round_data(fig)
    fig.update_layout(template="plotly_white")
    fig.update_layout(margin={"r": 20, "t": fig.layout.margin.t or 60, "b": 80,
                              "l": fig.layout.margin.l or 60})
    return chart_div(fig, kind)


def _breakdown_table(view: WorkloadView) -> str:
    configs, rows = breakdown_cells(view)
    if not rows or not configs:
        return ""
    head = "<tr><th></th>" + "".join(f"<th>{_e(c)}</th>" for c in configs) + "</tr>"
    body = "".join("<tr><td>" + _e(label) + "</td>" + "".join(f"<td class=num>{_e(c)}</td>" for c in cells) + "</tr>"
                   for label, cells in rows)
    note = f" ((n): {_e(view.baseline)} = 100)" if view.baseline and scored(rows) else ""
    return f"<p class=dim>Medians per configuration{note}</p><table>{head}{body}</table>"


def _crash_table(view: WorkloadView) -> str:
    rows = crash_cells(view)
    if not rows:
        return ""
    head = "<tr><th>configuration</th>" + "".join(f"<th>{_e(c)}</th>" for c in CRASH_COLUMNS) + "</tr>"
    body = "".join(f"<tr><td>{_e(name)}</td>" + "".join(f"<td class=num>{_e(c)}</td>" for c in cells[:-1])
                   + f"<td class={'bad' if lost else 'good'}>{_e(cells[-1])}</td></tr>" for name, cells, lost in rows)
    details = crash_details(view)  # settings the model could not exercise, losing states and when they were cut
    more = (f"<details><summary>Losing states and what the model could not exercise</summary><div class=why>"
            f"{_e(chr(10).join(details))}</div></details>") if details else ""
    return (f"<h3>Crash test</h3><p class=dim>Acknowledged commits after a simulated power cut. Model: "
            f"{_e(crash_model(view))}.</p><table>{head}{body}</table>{more}")


def _values_table(view: WorkloadView) -> str:
    """Every run's (or slice's) figure, in the order measured."""
    rows = [r for r in view.rows if r.primary.values]
    if not rows:
        return ""
    unit = _e(rows[0].primary.metric.unit)
    body = "".join(f"<tr><td>{_e(r.cell.config.name)}</td><td class=num>{_e(values_text(r, None))}</td></tr>"
                   for r in rows)
    return (f"<details><summary class=dim>every {'slice' if any(r.slice_s for r in rows) else 'run'}'s figure "
            f"({unit}, in the order measured)</summary><table>{body}</table></details>")


def _summary_table(table: ResultTable) -> str:
    """The table model: the same columns under the same names as every other format, its notes under it."""
    head = "<tr>" + "".join(f"<th>{_e(c.head)}</th>" for c in table.columns) + "</tr>"
    body = []
    for r in table.rows:
        cells = []
        for c in table.columns:
            text = _e(r.cells.get(c.key, ""))
            if c.key == CONFIGURATION:
                text += "".join(f' <span class="risk">⚠ {_e(f)}</span>' for f in r.flags)
                text = f"<b>★ {text}</b>" if r.recommended else text
                cells.append(f"<td class=nowrap>{text}</td>")
            elif c.key == VERDICT:
                tone = {"neutral": "dim", "good": "good", "bad": "bad"}[r.tone]
                cells.append(f'<td class="{tone} nowrap">{text}</td>')
            else:
                cells.append(f"<td{' class=num' if c.numeric else ''}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    notes = ("<ol class=dim>" + "".join(f"<li>{_e(n.text)}</li>" for n in table.notes) + "</ol>") if table.notes else ""
    return f"<p class=dim>{_e(table.caption)}</p><table>{head}{''.join(body)}</table>{notes}"


def machine(record: RunRecord) -> str:
    """The machine in a few words, from what the run stored: hostname, CPU, disk model."""
    host = record.host
    fp = host.get("fingerprint", {}) or {}
    cpu = host.get("cpu_model") or fp.get("host.cpu_model")
    cpus = host.get("cpus") or fp.get("host.cpus")
    disks = [str(v) for k, v in sorted(fp.items()) if k.startswith("device.") and k.endswith(".model") and v]
    kinds = [f"{fp.get(k.replace('.name', '.kind'), 'device')} {v}" for k, v in sorted(fp.items())
             if k.startswith("device.") and k.endswith(".name")]
    parts = [str(host.get("hostname", "?"))]
    if cpu:
        parts.append(f"{cpu}" + (f" ({cpus} CPUs)" if cpus else ""))
    if host.get("memory_bytes"):
        parts.append(f"{fmt_bytes(float(host['memory_bytes']))} memory")
    disk = ", ".join(disks) or ", ".join(kinds)
    if disk:
        parts.append(f"disk: {disk}" + ("" if disks else " (model not reported)"))
    if fp.get("mount.fstype"):
        parts.append(f"images on {fp['mount.fstype']}")
    parts.append(f"{host.get('os', '?')}, kernel {host.get('kernel', '?')}")
    return "; ".join(parts)


def _configurations_table(items: tuple[tuple[FsConfig, str], ...]) -> str:
    """What each configuration is, in the words every format uses (analysis/setup.py `what_it_is`)."""
    rows = "".join(f"<tr><td>{_e(c.name)}</td><td>{_e(what)}</td></tr>" for c, what in items)
    return f"<table><tr><th>configuration</th><th>what it is</th></tr>{rows}</table>"


def _host_table(record: RunRecord) -> str:
    facts = {k: v for k, v in record.host.items() if not isinstance(v, dict)}
    facts.update({f"storage under the images: {k}": v for k, v in record.host.get("fingerprint", {}).items()
                  if not k.startswith("host.")})
    facts.update({f"tool: {k}": v for k, v in record.host.get("tools", {}).items()})
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in facts.items())
    return f"<table>{rows}</table>"


def charts_for(record: RunRecord, view: WorkloadView, live: bool = False) -> list[tuple[str, go.Figure]]:
    """The charts that make sense for the workload, the ratio chart first: a safety chart only where
    commits are acknowledged, phases for file trees, latency where it was measured (`live`: a run still being
    executed, none marked recommended)."""
    if not any(r.primary.summary for r in view.rows):
        return []
    from pickfs.report.charts import (  # deferred: plotly, only where a chart is drawn
        device_chart,
        forest_chart,
        latency_chart,
        over_time_chart,
        phases_chart,
        safety_chart,
    )

    figs = [("forest", forest_chart(view, live=live)), ("references", forest_chart(view, references=True, live=live)),
            ("safety", safety_chart(view, live)), ("phases", phases_chart(view)), ("latency", latency_chart(view)),
            ("over-time", over_time_chart(view)), ("device", device_chart(record, view))]
    return [(k, f) for k, f in figs if f is not None]


def _setup(a: WorkloadAnswer) -> str:
    """The setup of the recommended configuration, to apply ('' when none is recommended)."""
    if a.setup is None:
        return ""
    return (f"<p>The setup of {_e(a.named)} (replace DEVICE and the data directory with yours):</p>"
            f"<pre class=why>{_e(chr(10).join(a.setup.lines()))}</pre>")


def _answer(answers: tuple[WorkloadAnswer, ...]) -> str:
    """The recommendations of every workload with the setup to apply, first on the page."""
    items = "".join(f"<li>{_e(a.answer.text)}{_setup(a)}</li>" for a in answers)
    return f'<div class="rec"><b>The answer</b><ul>{items}</ul></div>' if items else ""


def fixed_rate_html(fixed: FixedRate) -> str:
    """Per fixed-rate workload its percentile curves from the scheduled start and its table, per capacity search
    its percentile against the rates tried; '' when the run has neither."""
    if not fixed.views and not fixed.capacity:
        return ""
    from pickfs.report.charts import capacity_chart, percentile_chart  # deferred: plotly, only for a chart

    parts = []
    for view in fixed.views:
        header, cells = rate_cells(view)
        table = "".join(f"<tr>{''.join(f'<td>{_e(c)}</td>' for c in r)}</tr>" for r in cells)
        parts.append(f"<h2>{_e(view.label)} at a fixed rate</h2>"
                     + chart_html(percentile_chart(view, fixed.slices[view.label]), "percentiles")
                     + "<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + f"</tr>{table}</table>")
    for label, target, searched in fixed.capacity:
        parts.append(f"<h2>{_e(label)}: capacity within {_e(target.words())}</h2>"
                     + chart_html(capacity_chart(label, target, searched), "capacity"))
    return "\n".join(parts)


def _method(view: WorkloadView) -> str:
    """How it was measured, under the table: a race's resolution in sight, its log folded; other methods whole."""
    if view.race is None:
        return "".join(f"<p class=dim>{_e(line)}</p>" for line in method_lines(view))
    log = "".join(f"<p class=dim>{_e(line)}</p>" for line in method_lines(view, full=True))
    return ("".join(f"<p class=dim>{_e(line)}</p>" for line in resolution_line(view))
            + f"<details><summary class=dim>How the race measured (its log)</summary>{log}</details>")


def workload_html(s: Workload) -> list[str]:
    """A workload's part: its ratio chart, table, method and every figure, the breakdown, the crash test, the other
    charts, and why."""
    view = s.view
    settings = ", ".join(f"{k}={v}" for k, v in sorted(view.settings.items()))
    parts = [f"<h2>{_e(view.label)}</h2><p class=dim>{_e(view.kind)} workload; {_e(settings)}</p>"]
    charts = charts_for(s.record, view, s.live)
    if charts and charts[0][0] == "forest":
        parts.append(chart_html(charts.pop(0)[1], "forest"))
    if s.table is not None:
        parts.append(_summary_table(s.table))
        parts.append(_method(view))
        parts.append(_values_table(view))
    parts.append(_breakdown_table(view))
    parts.append(_crash_table(view))
    for kind, fig in charts:
        parts.append(chart_html(fig, kind))
    why = [f"{r.cell.config.name}:\n" + "\n".join(f"  {line}" for line in r.explanation)
           for r in view.rows if r.explanation]
    if why:
        parts.append(f"<details><summary><b>Why</b> <span class=dim>(what the monitors saw, per configuration)"
                     f"</span></summary><div class=why>{_e(chr(10).join(why))}</div></details>")
    return parts


class HtmlFormat(Format[list[str], str]):
    """One page: the answer first with the setup to apply, then per workload its ratio chart, table, resolution and
    race log, its crash test and charts; the crash tests, the settings that trade safety, what each configuration is
    and the machine close it. plotly.js inline (`plotly` INLINE: one self-contained file), from a file beside the
    page (the site, --html FILE), or none."""

    def __init__(self, plotly: str | None = INLINE) -> None:
        self.plotly = plotly
        self.name = "html"
        self.suffix = "html"
        self.export_help = ("write the HTML report, plotly.js beside it ('-': one self-contained page on stdout; a fault "
                            "run: one self-contained page)")

    def document(self, report: Report, parts: list[list[str]]) -> str:
        body = "\n".join(line for part in parts for line in part)
        return page(f"pickfs run {report.analysis.record.id}", body, self.plotly)

    def heading(self, s: Heading) -> list[str]:
        analysis = s.analysis
        record, method = analysis.record, analysis.plan.method
        hows = {r.how for v in analysis.views for r in v.rows if r.how}
        if hows - {ONE_AT_A_TIME}:
            how = ("configurations measured side by side, or whole runs alternated in rounds (each workload's method "
                   "is stated above its table)")
        else:
            how = (f"{method.runs} measured runs per configuration after {method.warmup} warm-up, each on "
                   "a freshly made filesystem")
        parts = [f"<h1>pickfs run {_e(record.id)}</h1>",
                 (f"<p class=dim>{_e(time.strftime('%Y-%m-%d %H:%M', time.localtime(record.created)))}, status "
                  f"{_e(record.status)}; {_e(how)}.</p><p class=machine>Machine: {_e(machine(record))}</p>")]
        if s.live:  # a run still being executed: partial figures, no answer until it ends
            parts.append(f'<p class="risk"><b>{_e(s.live)}</b></p>')
        return parts

    def disturbed(self, s: Disturbed) -> list[str]:
        return [f'<p class="risk"><b>{_e(s.line)}</b></p>'] if s.line else []  # said first, before the answer

    def warnings(self, s: Warnings) -> list[str]:
        return [f'<p class="risk">warning: {_e(w)}</p>' for w in s.lines]

    def answers(self, s: Answers) -> list[str]:
        return [] if s.live else [_answer(s.items)]

    def workload(self, s: Workload) -> list[str]:
        return workload_html(s)

    def crash_model(self, s: CrashModel) -> list[str]:
        if not any(r.crash is not None for v in s.views for r in v.rows):
            return []
        from pickfs.report.charts import crash_chart  # deferred: plotly, only where a chart is drawn

        crash = crash_chart(s.views)
        if crash is None:
            return []
        return ["<h2>Crash tests</h2>" + chart_html(crash, "crash") + "".join(f"<p class=dim>{_e(line)}</p>"
                                                                             for line in s.lines)]

    def risk_legend(self, s: RiskLegend) -> list[str]:
        if not s.lines:
            return []
        return ["<h2>Settings that trade safety for speed</h2><ul>" + "".join(f"<li>{_e(r)}</li>" for r in s.lines)
                + "</ul><p class=dim>Safety here is judged from the settings; a simulated power cut would measure "
                "it.</p>"]

    def scaling(self, s: ScalingWithClients) -> list[str]:
        return [scaling_html(s.scalings)]  # throughput and p99 against clients (report/scaling.py)

    def fixed_rates(self, s: FixedRates) -> list[str]:
        return [fixed_rate_html(s.fixed)]

    def configurations(self, s: Configurations) -> list[str]:
        return [f"<h2>Configurations</h2>{_configurations_table(s.items)}"]

    def machine(self, s: Machine) -> list[str]:
        return [f"<h2>Host</h2>{_host_table(s.record)}"]

    def run_notes(self, s: RunNotes) -> list[str]:
        if not s.notes:
            return []
        return ["<h2>Notes</h2><ul>" + "".join(f"<li>{_e(note)}</li>" for note in s.notes) + "</ul>"]

    def more_hint(self, s: MoreHint) -> list[str]:
        return []  # the page holds everything --explain adds, folded


HTML = HtmlFormat()


def render_html(run: RunRecord | AnalysedRun | Report, plotly: str | None = INLINE) -> str:
    """The whole page; plotly.js inline (one self-contained file) or from a file beside it (the site)."""
    return (HTML if plotly == INLINE else HtmlFormat(plotly)).render(run)


def page(title: str, body: str, plotly: str | None = INLINE) -> str:
    """A whole HTML document: the style, the error probe, and plotly.js inline, from a local file beside
    the page (a relative path: nothing is fetched from the network), or none."""
    if plotly is None:
        script = ""
    elif plotly == INLINE:
        from plotly.offline import get_plotlyjs  # deferred: plotly, only for a page that holds it

        script = f"<script>{get_plotlyjs()}</script>"
    else:
        script = f'<script src="{_e(plotly)}"></script>'

    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>{_e(title)}</title><style>{STYLE}</style>"
            f"<script>{PROBE}</script>{script}</head><body>{body}</body></html>\n")
