"""`pickfs results`: the runs in the results database."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click
from rich.table import Table

from pickfs import console
from pickfs.cli.common import read_store, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.store.results import default_results_path


@click.command("results", epilog=examples('pickfs results',
         'pickfs results --results runs.db'))
@workdir_option
@results_option
def command(workdir: str, results_path: str | None) -> None:
    """List the saved runs."""
    path = Path(results_path) if results_path else default_results_path(workdir)
    if not (results_path or os.environ.get("PICKFS_RESULTS")) and not os.path.lexists(path):
        console.info(f"no runs yet in {path}; start one with: pickfs run")
        return
    store = read_store(workdir, results_path)  # one named must exist
    rows = store.list_runs()
    if not rows:
        console.info(f"no runs yet in {store.path}; start one with: pickfs run")
        return
    table = Table(title=f"runs in {store.path}", title_justify="left")
    for col in ("run", "started", "status", "configs", "workloads", "measured", "failures"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.id, time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created)), r.status,
                      str(r.configs), r.workloads, str(r.trials_ok), str(r.trials_failed))
    console.show(table)
