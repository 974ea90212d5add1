"""`pickfs report RUN`: re-render a saved run without re-running it, in any format."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import click

from pickfs import console
from pickfs.analysis.run import AnalysedRun, analyse
from pickfs.cli.common import read_store, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.cli.fleet import report_fleet
from pickfs.engine.runlock import RunLive, is_live
from pickfs.errors import PlanError, UntrustedPath
from pickfs.faults.document import is_fault_run
from pickfs.model import RunRecord
from pickfs.report.csv_export import render_csv
from pickfs.report.formats import FORMATS
from pickfs.report.html import PLOTLY_FILE, HtmlFormat, render_html
from pickfs.report.sections import Format, Report, report_of
from pickfs.report.terminal import render_run, terse_lines
from pickfs.report.text import live_line
from pickfs.safepaths import check_own_dir, check_target, own_dir, resolve, write_export
from pickfs.store import ResultStore
from pickfs.units import has_control


def _write_text(export: Export, run: Report, path: Path) -> str:
    write_export(path, export.render(run).encode(), f"--{export.name}")
    return f"{export.name} written to {path}"


def _write_html_page(export: Export, run: Report, path: Path) -> str:
    """The page at `path` and plotly.js once beside it (a page a few hundred kB, plotly loaded from the file)."""
    from plotly.offline import get_plotlyjs  # deferred: plotly, for --html only

    beside = path.parent / PLOTLY_FILE
    js = get_plotlyjs()
    if beside.is_symlink() or not beside.is_file() or beside.stat().st_size != len(js) or beside.read_text() != js:
        write_export(beside, js.encode(), "--html (plotly.js beside the page)")
    write_export(path, render_html(run, plotly=PLOTLY_FILE).encode(), "--html")
    return f"html written to {path} (with {beside} beside it)"


@dataclass(frozen=True)
class Export:
    """One export a run can be written in: its option (--NAME), its file suffix, what the option writes (its help),
    the text it renders (what standard output gets; plotly.js inline in the HTML page), and how it is written to a
    file (the HTML page puts plotly.js beside itself)."""

    name: str
    suffix: str
    help: str
    render: Callable[[Report], str]
    to_file: Callable[[Export, Report, Path], str] = _write_text

    def write(self, run: Report, path: Path) -> None:
        if str(path) == "-":
            click.echo(self.render(run), nl=False)
        else:
            console.info(self.to_file(self, run, path))


def export_of(fmt: Format[Any, Any]) -> Export:
    """A registered format that has a file suffix, as an export."""
    return Export(fmt.name, fmt.suffix, fmt.export_help, fmt.text,
                  _write_html_page if isinstance(fmt, HtmlFormat) else _write_text)


# every registered format written to a file (report/formats.py), and the trials CSV: raw figures, not a report
EXPORTS: tuple[Export, ...] = (*(export_of(f) for f in FORMATS if f.suffix),
                               Export("csv", "csv", "write one CSV row per trial, with its block and round (a fault run: one row per cell)", render_csv))
EXPORT_BY_NAME = {e.name: e for e in EXPORTS}


def check_export_targets(targets: dict[str, Path | None]) -> None:
    """Before anything runs: every export path can be written (its directory exists and is reached without
    another user's link, the name is not a directory or a device; a link there is replaced, never followed), so
    a long run never ends on a path that cannot take its report."""
    seen: dict[str, str] = {}
    for fmt, path in targets.items():
        if path is None or str(path) == "-":
            continue
        text = str(path)
        flag = f"--{fmt}"
        if not text or has_control(text):
            raise PlanError(f"{flag} {text!r} is not a file name",
                            f"e.g. {flag} report.{EXPORT_BY_NAME[fmt].suffix} ('-' for stdout)")
        try:
            real = check_target(path, flag)
        except UntrustedPath as exc:
            raise PlanError(exc.message, exc.hint) from None
        if not os.access(real.parent, os.W_OK | os.X_OK):  # the file is renamed onto the name: its directory's say
            raise PlanError(f"{flag} {path} cannot be written (permission denied)",
                            "name a file in a directory you can write to")
        key = str(real)
        if key in seen:
            raise PlanError(f"--{seen[key]} and {flag} name the same file {path}", "give each format its own file")
        seen[key] = fmt


def write_exports(run: RunRecord | AnalysedRun | Report, targets: dict[str, Path | None]) -> None:
    """Write each requested format to its path ('-' for standard output); the run analysed and its tables built
    once for all."""
    if not any(targets.values()):
        return
    report = report_of(run)
    for fmt, path in targets.items():
        if path is not None:
            EXPORT_BY_NAME[fmt].write(report, Path(path))


def target_key(e: Export) -> str:
    """The keyword its option's value is passed as: --table-csv FILE -> table_csv_path."""
    return f"{e.name.replace('-', '_')}_path"


export_options = [click.option(f"--{e.name}", target_key(e), type=click.Path(path_type=Path), help=e.help)
                  for e in EXPORTS]


F = TypeVar("F", bound=Callable[..., Any])


def with_exports(f: F) -> F:
    for option in reversed(export_options):
        f = option(f)
    return f


def export_targets(o: dict[str, Any]) -> dict[str, Path | None]:
    return {e.name: o.get(target_key(e)) for e in EXPORTS}


def check_site_dir(path: Path) -> None:
    """The site's directory is one pickfs made, or one that can be: new, or empty and the user's own."""
    text = str(path)
    if not text or has_control(text):
        raise PlanError(f"--site {text!r} is not a directory name", "e.g. --site report-site")
    problem = check_own_dir(path, "--site", made=site_files_only)
    if problem:
        raise PlanError(problem, "name a new or empty directory of your own, e.g. --site report-site")
    try:
        real = resolve(path, "--site")
    except UntrustedPath as exc:
        raise PlanError(exc.message, exc.hint) from None
    if not real.exists() and not real.parent.is_dir():
        raise PlanError(f"--site {path}: the directory {real.parent} does not exist",
                        f"create it first (mkdir -p {real.parent})")


SITE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
_OLD_SITE = re.compile(r"index\.html|plotly\.min\.js|(run|plan)-[A-Za-z0-9._-]+\.html")


def site_files_only(names: list[str]) -> bool:
    """A directory holding only a site's pages: one an earlier pickfs wrote, before it marked its directories."""
    return "index.html" in names and all(_OLD_SITE.fullmatch(n) for n in names)


def write_site(store: ResultStore, path: Path) -> None:
    from pickfs.report.site import build_site  # deferred: plotly (its pages' charts), for --site only

    records = [record for r in store.list_runs() if not is_fault_run(record := store.load(r.id))]  # runs that measured
    real = own_dir(path, "--site", 0o755, made=site_files_only)  # the pages readable by the user who asked
    files = build_site(records)
    for name, text in files.items():
        if not SITE_NAME.fullmatch(name):  # a run id read from the file names a page: never a path
            raise PlanError(f"--site: a run in {store.path} would name the page {name!r}",
                            "leave that results file out of the site")
        write_export(real / name, text.encode(), "--site")
    console.info(f"site of {len(records)} run(s) written to {path / 'index.html'}")


@click.command("report", epilog=examples('pickfs report                                   # the latest run, fitted to the terminal',
         'pickfs report 20260101 --explain                # a unique prefix of a run id',
         'pickfs report latest --quiet                    # one line per workload: the configuration it names',
         'pickfs report latest --html r.html --json r.json --markdown r.md --csv r.csv',
         'pickfs report --site site/                      # every run but fault runs as a static site'))
@click.argument("run", default="latest")
@click.option("--explain", is_flag=True, help="also the other central values (geometric mean with its interval, "
              "sanitized mean), the space used, every slice's figure, the race log, what each configuration is, every "
              "note whole and every configuration's full explanation (by default one line for the recommended one)")
@click.option("--quiet", "-q", is_flag=True, help="for scripts: one line per workload, the configuration the run "
              "names ('LABEL: NAME'), instead of the tables (a fault run: one line per cell, its outcome)")
@click.option("--site", "site", type=click.Path(path_type=Path),
              help="write every run of the results store as a static site in this directory: an index, a page "
                   "per run, a comparison page per plan run more than once (fault runs are left out: pickfs report "
                   "RUN --html FILE draws one)")
@with_exports
@workdir_option
@results_option
def command(run: str, explain: bool, quiet: bool, site: Path | None, workdir: str, results_path: str | None, **o: Any) -> None:
    """Show a saved run (an id, a unique prefix, or 'latest'); with --json, --markdown, --csv or --html, write
    those instead of showing the tables. A fleet run's id (fleet-...) shows its machines compared: --html
    with heat maps, or --json."""
    targets = export_targets(o)
    check_export_targets(targets)
    store = read_store(workdir, results_path)
    if site is not None:
        check_site_dir(site)
        write_site(store, site)
        if not any(targets.values()):
            return
    # --- fleet: a fleet run's hosts compared, as its own page
    if store.is_fleet(run):
        report_fleet(store, run, targets)
        return
    # --- end fleet
    record = store.load(run)
    live = record.status == "running" and is_live(Path(workdir), record.id)  # another pickfs is executing it
    if is_fault_run(record):  # `pickfs crashtest --fault`: its cells, drawn by the fault test's own renderers
        from pickfs.cli.faults import report_fault_run  # deferred: the fault path, loaded only when asked for

        report_fault_run(record, targets, explain, quiet, live)
        return
    analysis = analyse(record)  # once, for every format shown or written
    if live:  # every format then says so first and gives no answer
        analysis = replace(analysis, live=True)
        check_measured(store, analysis)
    report = report_of(analysis, live)  # its tables built once, for every format shown or written
    if quiet:
        if live:
            console.info(live_line(analysis))
        for line in terse_lines(report):
            console.plain(line)
    elif not any(targets.values()):  # a file asked for is the output: the tables are not printed as well
        console.show(render_run(report, explain=explain))
    write_exports(report, targets)


def check_measured(store: ResultStore, analysis: AnalysedRun) -> None:
    """A run still being executed that has measured nothing yet has nothing to report: refused (exit 2), naming
    the latest run that ended, if there is one."""
    if any(v.measured for v in analysis.views):
        return
    run_id = analysis.record.id
    ended = [r.id for r in store.list_runs() if r.status != "running" and r.id != run_id]
    hint = f"report the latest run that ended: pickfs report {ended[-1]}" if ended else "wait for its first slices"
    raise RunLive(f"run {run_id} is still running and has measured nothing yet", hint)
