"""`pickfs report RUN`: re-render a saved run without re-running it, in any format."""

from __future__ import annotations

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

FORMATS: dict[str, Callable[[RunRecord], str]] = {
    "json": render_json,
    "markdown": render_markdown,
    "csv": render_csv,
}


def html(record: RunRecord) -> str:
    from pickfs.report.html import render_html  # plotly is imported only when asked for

    return render_html(record)


FORMATS["html"] = html


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


@click.command("report")
@click.argument("run", default="latest")
@with_exports
@workdir_option
@results_option
def command(run: str, workdir: str, results_path, **o) -> None:
    """Show a saved run (an id, a unique prefix, or 'latest')."""
    record = open_store(workdir, results_path).load(run)
    targets = export_targets(o)
    if not any(str(p) == "-" for p in targets.values() if p):
        console.show(render_run(record))
    write_exports(record, targets)
