"""The one list of sections and the format registry (report/sections.py, report/formats.py) on the stored real runs:
every format draws every kind of section (or says in its method why it leaves one out), a new format is one class
(docs/extending.md's recipe, proved here by a dummy format), the sections a format once lacked are drawn by all, and
the terminal's report loads no plotly."""

import gzip
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest
from rich.console import Console

from pickfs.analysis.run import AnalysedRun, analyse
from pickfs.analysis.setup import what_it_is
from pickfs.model import RunRecord
from pickfs.report.formats import FORMATS
from pickfs.report.html import render_html
from pickfs.report.json_export import run_to_dict
from pickfs.report.markdown import render_markdown
from pickfs.report.sections import Format, Report, Section, report_of, sections
from pickfs.report.terminal import render_run
from pickfs.store import ResultStore

DATA = Path(__file__).resolve().parents[1] / "data" / "real-runs.db.gz"
KINDS = Section.__subclasses__()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("formats") / "results.db"
    path.write_bytes(gzip.decompress(DATA.read_bytes()))
    return path


@pytest.fixture(scope="module")
def records(db: Path) -> list[RunRecord]:
    store = ResultStore(db)
    out = [store.load(r.id) for r in store.list_runs()]
    store.close()
    return out


def terminal(run: AnalysedRun, explain: bool = False) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=160, record=True, file=sink)
        console.print(render_run(run, explain=explain))
        return console.export_text()


class Dummy(Format[list[str], list[str]]):
    """A new format, as docs/extending.md says to add one: a subclass of Format with one method per kind of section
    and the document; here each part names the kind of section drawn."""

    name = "dummy"

    def document(self, report: Report, parts: list[list[str]]) -> list[str]:
        return [name for part in parts for name in part]

    def heading(self, s):
        return ["Heading"]

    def disturbed(self, s):
        return ["Disturbed"]

    def warnings(self, s):
        return ["Warnings"]

    def answers(self, s):
        return ["Answers"]

    def workload(self, s):
        return [f"Workload {s.view.label}"]

    def crash_model(self, s):
        return ["CrashModel"]

    def risk_legend(self, s):
        return ["RiskLegend"]

    def scaling(self, s):
        return ["ScalingWithClients"]

    def fixed_rates(self, s):
        return ["FixedRates"]

    def configurations(self, s):
        return ["Configurations"]

    def machine(self, s):
        return ["Machine"]

    def run_notes(self, s):
        return ["RunNotes"]

    def more_hint(self, s):
        return ["MoreHint"]


def test_a_dummy_format_sees_every_section_drawn_in_the_one_order(records: list[RunRecord]) -> None:
    for record in records:
        drawn = Dummy().render(record)
        labels = [w["label"] for w in record.plan["workloads"]]
        assert drawn == ["Heading", "Disturbed", "Warnings", "Answers", *(f"Workload {x}" for x in labels),
                         "CrashModel", "RiskLegend", "ScalingWithClients", "FixedRates", "Configurations", "Machine",
                         "RunNotes", "MoreHint"]
        assert {name.split()[0] for name in drawn} == {k.__name__ for k in KINDS}  # every kind of section


def test_a_format_that_leaves_a_kind_of_section_undrawn_cannot_be_made() -> None:
    # a format written before a kind of section existed: it must draw it (or say in the method why not)
    without = {k: v for k, v in vars(Dummy).items() if not k.startswith("_") and k != "more_hint"}
    forgetful = type("Forgetful", (Format,), without)
    with pytest.raises(TypeError, match="more_hint"):
        forgetful()


def test_each_kind_of_section_is_drawn_by_a_method_every_format_must_have(records: list[RunRecord]) -> None:
    report = report_of(records[0])
    for section in sections(report):
        fmt = mock.Mock(spec=Format)
        section.draw(fmt)
        (called,) = fmt.method_calls
        assert called[0] in Format.__abstractmethods__, called
    assert {type(s) for s in sections(report)} == set(KINDS)
    for fmt in FORMATS:  # the registry: every format a Format, each made (so each draws every kind)
        assert isinstance(fmt, Format) and fmt.name
    assert len({f.name for f in FORMATS}) == len(FORMATS)


def test_every_registered_format_draws_every_stored_run(records: list[RunRecord]) -> None:
    for record in records:
        report = report_of(analyse(record))  # analysed once, its tables built once, for every format
        for fmt in FORMATS:
            assert fmt.render(report)


def test_the_sections_one_format_lacked_are_drawn_by_every_format(records: list[RunRecord]) -> None:
    # the plan's warnings were missing from Markdown, the run's notes from Markdown and HTML
    record = records[0]
    plan = {**record.plan, "warnings": ["xfs-tuned is not one variable away from xfs"]}
    run = analyse(replace(record, plan=plan, notes=("stopped at the budget",)))
    for text in (terminal(run), render_markdown(run), render_html(run, plotly=None)):
        assert "xfs-tuned is not one variable away from xfs" in text
        assert "stopped at the budget" in text
    # the JSON's notes are the run's notes section (its warnings stay in its plan, as stored: no section adds them)
    assert run_to_dict(run)["notes"] == ["stopped at the budget"]


def test_every_format_says_what_a_configuration_is_in_the_same_words(records: list[RunRecord]) -> None:
    # the HTML said it in a table of its own (mkfs '-', scheduler 'default') beside the preset's description
    for record in records:
        run = analyse(record)
        words = {c.name: what_it_is(c) for c in run.plan.configs}
        page, markdown, explained = render_html(run, plotly=None), render_markdown(run), terminal(run, explain=True)
        for name, what in words.items():
            assert f"<tr><td>{name}</td><td>{what}</td></tr>" in page
            assert f"| {name} | {what} |" in markdown
            assert any(line.split() == [name, *what.split()] for line in explained.splitlines())
        assert {c["name"]: c["what"] for c in run_to_dict(run)["configurations"]} == words
        assert "<th>mkfs options</th>" not in page


def test_no_format_parses_the_plan_or_analyses_the_run_again(records: list[RunRecord]) -> None:
    report = report_of(records[0])
    again = [mock.patch(f"pickfs.analysis.{where}", side_effect=AssertionError(f"{where} again"))
             for where in ("run.analyse", "run.build_views", "run.plan_from_dict", "views.workload_views",
                           "views.plan_from_dict", "latency.fixed_rate", "latency.plan_from_dict")]
    for patch in again:
        patch.start()
    try:
        for fmt in FORMATS:
            assert fmt.render(report)
    finally:
        for patch in again:
            patch.stop()


def test_the_terminal_report_of_a_stored_run_loads_no_plotly(db: Path, records: list[RunRecord]) -> None:
    code = ("import os, sys\n"
            "from rich.console import Console\n"
            "from pickfs.report.terminal import render_run\n"
            "from pickfs.report import formats\n"
            "from pickfs.store import ResultStore\n"
            "store = ResultStore(sys.argv[1])\n"
            "for r in store.list_runs():\n"
            "    Console(file=open(os.devnull, 'w')).print(render_run(store.load(r.id), explain=True))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'plotly'))\n")
    out = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout[:500]


def test_a_report_asked_for_as_still_running_is_drawn_as_one(records: list[RunRecord]) -> None:
    # report_of handed back a Report as it was, its `live` ignored: a run still being executed drawn with an answer
    ended = report_of(records[0])
    assert not ended.live
    again = report_of(ended, live=True)
    assert again.live and again.analysis is ended.analysis
    assert report_of(again) is again and report_of(ended) is ended


def test_every_export_and_every_page_of_the_site_draw_from_tables_built_once(records: list[RunRecord],
                                                                              tmp_path: Path) -> None:
    # each export and each page built the run's tables again: four times for --json --markdown --html --table-csv,
    # twice per run for the site (its index's answers and its page)
    from pickfs.cli.report import write_exports
    from pickfs.report import sections as module
    from pickfs.report.site import build_site

    record = records[0]
    measured = sum(v.measured for v in analyse(record).views)
    assert measured
    targets: dict[str, Path | None] = {"json": tmp_path / "r.json", "markdown": tmp_path / "r.md",
                                       "table-csv": tmp_path / "t.csv", "html": tmp_path / "r.html"}
    with mock.patch.object(module, "build_table", wraps=module.build_table) as built:
        write_exports(record, targets)
        assert built.call_count == measured and all(p.stat().st_size for p in targets.values() if p)
        built.reset_mock()
        build_site([record])
        assert built.call_count == measured


def test_every_format_with_a_file_suffix_is_an_export_a_fault_run_writes_too() -> None:
    # the exports were a second registry beside FORMATS: a format registered as the extending guide says was
    # never written by `pickfs report`
    from pickfs.cli.faults import FORMATS as FAULT_FORMATS
    from pickfs.cli.report import EXPORT_BY_NAME, EXPORTS

    written = [f for f in FORMATS if f.suffix]
    assert {f.name for f in written} == {"json", "markdown", "table-csv", "html"}
    for fmt in written:
        assert EXPORT_BY_NAME[fmt.name].render == fmt.text and EXPORT_BY_NAME[fmt.name].suffix == fmt.suffix
    assert {e.name for e in EXPORTS} == set(FAULT_FORMATS)  # a fault run draws each with its own renderers
