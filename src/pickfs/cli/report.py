"""`pickfs report RUN`: re-render a saved run without re-running it, in any format."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import click

from pickfs import console
from pickfs.cli.common import open_store, results_option, workdir_option
from pickfs.model import RunRecord
from pickfs.report.csv_export import render_csv
from pickfs.report.json_export import render_json
from pickfs.report.markdown import render_markdown
from pickfs.report.terminal import render_run
from pickfs.units import has_control

FORMATS: dict[str, Callable[[RunRecord], str]] = {
    "json": render_json,
    "markdown": render_markdown,
    "csv": render_csv,
}


def html(record: RunRecord) -> str:
    from pickfs.report.html import render_html  # plotly is imported only when asked for

    return render_html(record)


FORMATS["html"] = html


def check_export_targets(targets: dict[str, Path | None]) -> None:
    """Before anything runs: every export path can be written (its directory exists and is writable,
    the path itself is not a directory), so a long run never ends on a path that cannot take its report."""
    from pickfs.errors import PlanError

    seen: dict[str, str] = {}
    for fmt, path in targets.items():
        if path is None or str(path) == "-":
            continue
        text = str(path)
        flag = f"--{fmt}"
        if not text or has_control(text):
            raise PlanError(f"{flag} {text!r} is not a file name", f"e.g. {flag} report.{fmt[:4]} ('-' for stdout)")
        p = Path(path)
        if p.is_dir():
            raise PlanError(f"{flag} {path} is a directory", f"name a file in it, e.g. {flag} {p / ('report.' + fmt[:4])}")
        parent = p.parent
        if not parent.is_dir():
            raise PlanError(f"{flag} {path}: the directory {parent} does not exist",
                            f"create it first (mkdir -p {parent}), or name a file in an existing directory")
        if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
            raise PlanError(f"{flag} {path} cannot be written (permission denied)",
                            "name a file in a directory you can write to")
        key = os.path.realpath(p)
        if key in seen:
            raise PlanError(f"--{seen[key]} and {flag} name the same file {path}", "give each format its own file")
        seen[key] = fmt


def write_exports(record: RunRecord, targets: dict[str, Path | None]) -> None:
    """Write each requested format to its path ('-' for standard output)."""
    for fmt, path in targets.items():
        if path is None:
            continue
        text = FORMATS[fmt](record)
        if str(path) == "-":
            click.echo(text, nl=False)
        else:
            Path(path).write_text(text)
            console.info(f"{fmt} written to {path}")


export_options = [
    click.option("--json", "json_path", type=click.Path(path_type=Path), help="write the run as JSON ('-': stdout)"),
    click.option("--markdown", "markdown_path", type=click.Path(path_type=Path), help="write it as Markdown"),
    click.option("--csv", "csv_path", type=click.Path(path_type=Path), help="write one CSV row per trial"),
    click.option("--html", "html_path", type=click.Path(path_type=Path), help="write a self-contained HTML report"),
]


def with_exports(f):
    for option in reversed(export_options):
        f = option(f)
    return f


def export_targets(o: dict) -> dict[str, Path | None]:
    return {fmt: o.get(f"{fmt}_path") for fmt in FORMATS}


def check_site_dir(path: Path) -> None:
    """The site's directory is a directory that can be written, or can be made in one that exists."""
    from pickfs.errors import PlanError

    text = str(path)
    if not text or has_control(text):
        raise PlanError(f"--site {text!r} is not a directory name", "e.g. --site report-site")
    if path.is_symlink():
        raise PlanError(f"--site {path} is a symbolic link", "name the directory itself")
    if path.exists() and not path.is_dir():
        raise PlanError(f"--site {path} is a file, not a directory", f"name a directory, e.g. --site {path}.d")
    if path.exists():
        st = path.lstat()
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise PlanError(f"--site {path} is not your own directory (another user owns it, or others can write "
                            "to it)", "name a directory of your own, e.g. --site report-site")
    parent = path if path.exists() else path.parent
    if not parent.is_dir():
        raise PlanError(f"--site {path}: the directory {parent} does not exist",
                        f"create it first (mkdir -p {parent})")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PlanError(f"--site {path} cannot be written (permission denied)", "name a directory you can write to")


def _write_replacing(path: Path, text: str) -> None:
    """Write a file by renaming a fresh one into place: a link planted under its name is replaced, never followed."""
    fd, tmp = tempfile.mkstemp(prefix=".pickfs-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # a report, for reading
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_site(store, path: Path) -> None:
    from pickfs.report.site import build_site

    records = [store.load(r.id) for r in store.list_runs()]
    path.mkdir(mode=0o755, exist_ok=True)
    files = build_site(records)
    for name, text in files.items():
        _write_replacing(path / name, text)
    console.info(f"site of {len(records)} run(s) written to {path / 'index.html'}")


@click.command("report")
@click.argument("run", default="latest")
@click.option("--explain", is_flag=True, help="every configuration's full explanation (by default one line for "
              "each that matters: the significant ones and the recommended)")
@click.option("--site", "site", type=click.Path(path_type=Path),
              help="write every run of the results store as a static site in this directory: an index, a page "
                   "per run, a comparison page per plan run more than once")
@with_exports
@workdir_option
@results_option
def command(run: str, explain: bool, site: Path | None, workdir: str, results_path, **o) -> None:
    """Show a saved run (an id, a unique prefix, or 'latest').

    A fleet run's id (fleet-...) shows its machines compared: --html with heat maps, or --json."""
    targets = export_targets(o)
    check_export_targets(targets)
    store = open_store(workdir, results_path, read_only=True)
    if site is not None:
        check_site_dir(site)
        write_site(store, site)
        if not any(targets.values()):
            return
    # --- fleet (issue 16): a fleet run's hosts compared, as its own page
    if store.is_fleet(run):
        from pickfs.cli.fleet import report_fleet

        report_fleet(store, run, targets)
        return
    # --- end fleet
    record = store.load(run)
    if not any(str(p) == "-" for p in targets.values() if p):
        console.show(render_run(record, explain=explain))
    write_exports(record, targets)
