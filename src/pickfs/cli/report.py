"""`pickfs report RUN`: re-render a saved run without re-running it."""

from __future__ import annotations

from pathlib import Path

import click

from pickfs import console
from pickfs.cli.common import open_store, results_option, workdir_option
from pickfs.report.json_export import render_json
from pickfs.report.terminal import render_run


@click.command("report")
@click.argument("run", default="latest")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="write the run as JSON here ('-' for stdout)")
@workdir_option
@results_option
def command(run: str, json_path: Path | None, workdir: str, results_path) -> None:
    """Show a saved run (an id, a unique prefix, or 'latest')."""
    record = open_store(workdir, results_path).load(run)
    if json_path and str(json_path) == "-":
        click.echo(render_json(record), nl=False)
        return
    console.show(render_run(record))
    if json_path:
        json_path.write_text(render_json(record))
        console.info(f"JSON written to {json_path}")
