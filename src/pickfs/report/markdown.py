"""The run as Markdown, for pasting into an issue or a wiki (pure)."""

from __future__ import annotations

import html
import re
import time

from pickfs.analysis.run import AnalysedRun
from pickfs.model import RunRecord
from pickfs.report.crash_text import crash_details, crash_statements
from pickfs.report.latency import latency_cells
from pickfs.report.scaling import scaling_table
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
)
from pickfs.report.table import CONFIGURATION, ResultTable
from pickfs.report.text import (
    CRASH_COLUMNS,
    breakdown_cells,
    crash_cells,
    crash_model,
    method_lines,
    scored,
    values_text,
)

# Characters that Markdown (CommonMark, GitHub's tables) would read as markup, escaped with a backslash.
_MARKUP = re.compile(r"([\\`*_\[\]#|~!{}])")


def md_text(text: object) -> str:
    """Text from a run (labels, names, notes) as inert Markdown: no headings, links, tables or HTML (pure)."""
    one_line = " ".join(str(text).splitlines())
    return _MARKUP.sub(r"\\\1", html.escape(one_line, quote=False))


def md_code(text: object) -> str:
    """Text as one inline code span, whatever backticks it holds (pure)."""
    one_line = " ".join(str(text).splitlines())
    longest = max((len(run) for run in re.findall(r"`+", one_line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def _cell(text: str) -> str:
    return md_text(text)


def results_table(table: ResultTable) -> list[str]:
    """The table model as a Markdown table, its notes numbered under it."""
    lines = [md_text(table.caption) + ".", "",
             "| " + " | ".join(md_text(c.head) for c in table.columns) + " |",
             "|" + "".join("---:|" if c.numeric else "---|" for c in table.columns)]
    for r in table.rows:
        cells = []
        for c in table.columns:
            text = md_text(r.cells.get(c.key, ""))
            if c.key == CONFIGURATION:
                text += " ⚠" if r.unsafe else ""
                text = f"**★ {text}**" if r.recommended else text
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    if table.notes:
        lines += ["", "Notes:", ""] + [f"{n.number}. {md_text(n.text)}" for n in table.notes]
    flagged = [r for r in table.rows if r.flags]
    if flagged:
        lines += ["", "⚠ " + "; ".join(f"{md_text(r.config)}: {md_text(', '.join(r.flags))}" for r in flagged)]
    return lines


def workload_lines(s: Workload) -> list[str]:
    """A workload's part: its settings, its answer and the setup to apply (Markdown says each workload's answer at
    its head, for pasting one part alone), the table, every figure, the breakdown, the crash test, the method."""
    view = s.view
    metric = view.rows[0].primary.metric if view.rows else None
    unit = metric.unit if metric else ""
    settings = ", ".join(f"{k}={v}" for k, v in sorted(view.settings.items()))
    lines = [f"## {md_text(view.label)}", "", md_code(settings), ""]
    if s.table is not None:
        if not s.live and s.answer is not None:
            lines += ["**Recommendation.** " + md_text(s.answer.answer.text), ""]
            if s.answer.setup is not None:
                lines += [f"**The setup of {md_text(s.answer.named)}** (replace DEVICE and the data directory "
                          "with yours):", "", *(f"    {line}" for line in s.answer.setup.lines()), ""]
        lines += results_table(s.table)
    measured_rows = [r for r in view.rows if r.primary.values] if view.measured else []
    if measured_rows:
        what = "slice" if any(r.slice_s for r in measured_rows) else "run"
        lines += ["", f"Per {what} ({md_text(unit)}, in the order measured):", ""]
        lines += [f"- {_cell(r.cell.config.name)}: {md_text(values_text(r))}" for r in measured_rows]
    configs, details = breakdown_cells(view)
    if details and configs:
        note = f" ((n): {md_text(view.baseline)} = 100)" if view.baseline and scored(details) else ""
        lines += ["", f"Medians per configuration{note}:", "",
                  "| | " + " | ".join(_cell(c) for c in configs) + " |", "|---|" + "---:|" * len(configs)]
        lines += [f"| {_cell(label)} | " + " | ".join(_cell(c) for c in cells) + " |" for label, cells in details]
    crash = crash_cells(view)
    if crash:
        lines += ["", "Crash test (acknowledged commits after a simulated power cut):", "",
                  "| configuration | " + " | ".join(CRASH_COLUMNS) + " |", "|---|" + "---:|" * (len(CRASH_COLUMNS) - 1)
                  + "---|"]
        lines += [f"| {_cell(name)} | " + " | ".join(_cell(c) for c in cells) + " |" for name, cells, _ in crash]
        lines += ["", f"Model: {md_text(crash_model(view))}."]
        # crash-fidelity work: what no simulation shows, settings not exercised, when losing states were cut
        lines += [f"{md_text(x)}." for x in crash_statements([view])[1:]]
        losing = crash_details(view)
        if losing:
            lines += [""] + [f"- {md_text(x)}" for x in losing]
    if view.measured:
        lines += ["", *(f"- {md_text(line)}" for line in method_lines(view))]
    return [*lines, ""]


class MarkdownFormat(Format[list[str], str]):
    """The run as Markdown, for pasting into an issue or a wiki: each workload's part opens with its answer."""

    name = "markdown"
    suffix = "md"
    export_help = "write it as Markdown"

    def document(self, report: Report, parts: list[list[str]]) -> str:
        return "\n".join(line for part in parts for line in part)

    def heading(self, s: Heading) -> list[str]:
        record, host = s.analysis.record, s.analysis.record.host
        lines = [f"# pickfs run {md_text(record.id)}", "",
                 md_text(f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(record.created))}, "
                         f"{host.get('hostname', '?')}: {host.get('os', '?')}, kernel {host.get('kernel', '?')}, "
                         f"{host.get('cpus', '?')} CPUs; status {record.status}."), ""]
        if s.live:  # a run still being executed: partial figures, no answer until it ends
            lines += [f"**{md_text(s.live)}**", ""]
        return lines

    def disturbed(self, s: Disturbed) -> list[str]:
        return [f"**{md_text(s.line)}**", ""] if s.line else []  # said first, before the answer

    def warnings(self, s: Warnings) -> list[str]:
        return [line for w in s.lines for line in (f"**warning:** {md_text(w)}", "")]

    def answers(self, s: Answers) -> list[str]:
        return []  # each workload's part opens with its answer (workload_lines)

    def workload(self, s: Workload) -> list[str]:
        return workload_lines(s)

    def crash_model(self, s: CrashModel) -> list[str]:
        return []  # said under each workload's crash table, with the model of its test

    def risk_legend(self, s: RiskLegend) -> list[str]:
        if not s.lines:
            return []
        return ["### Settings that trade safety for speed", ""] + [f"- {md_text(x)}" for x in s.lines] + [""]

    def scaling(self, s: ScalingWithClients) -> list[str]:
        lines: list[str] = []
        for scaling in s.scalings:
            lines += [f"### {md_text(scaling.label)}: scaling with clients", "",
                      *(f"    {line}" for line in scaling_table(scaling)), ""]
        return lines

    def fixed_rates(self, s: FixedRates) -> list[str]:
        lines: list[str] = []
        for title, header, cells in latency_cells(s.fixed):  # fixed rate and the capacity search: report/latency.py
            lines += [f"### {md_text(title)}", "", "| " + " | ".join(_cell(h) for h in header) + " |",
                      "|---|" + "---:|" * (len(header) - 1), *("| " + " | ".join(_cell(c) for c in r) + " |"
                                                             for r in cells), ""]
        return lines

    def configurations(self, s: Configurations) -> list[str]:
        return ["### Configurations", "", "| configuration | what it is |", "|---|---|",
                *(f"| {_cell(c.name)} | {_cell(what)} |" for c, what in s.items), ""]

    def machine(self, s: Machine) -> list[str]:
        return []  # the heading's line names the machine; its every fact is in the JSON

    def run_notes(self, s: RunNotes) -> list[str]:
        if not s.notes:
            return []
        return ["### Notes", "", *(f"- {md_text(note)}" for note in s.notes), ""]

    def more_hint(self, s: MoreHint) -> list[str]:
        return []  # the file holds everything --explain adds


MARKDOWN = MarkdownFormat()


def render_markdown(run: RunRecord | AnalysedRun | Report) -> str:
    return MARKDOWN.render(run)
