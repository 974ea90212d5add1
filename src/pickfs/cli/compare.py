"""`pickfs compare A B`: two runs side by side (two machines, two dates, before and after)."""

from __future__ import annotations

from pathlib import Path

import click

from pickfs import console
from pickfs.cli.common import open_store, results_option, workdir_option
from pickfs.store import ResultStore


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--results-b", type=click.Path(path_type=Path, exists=True),
              help="the results database run B is in, when it is another (e.g. copied from another machine)")
@workdir_option
@results_option
def command(run_a: str, run_b: str, results_b: Path | None, workdir: str, results_path) -> None:
    """Matching cells of two runs side by side, with ratios and significance; the settings that
    differ, named, and each run's ranking."""
    from pickfs.report.comparison import comparison_report

    store = open_store(workdir, results_path, read_only=True)
    a = store.load(run_a)
    b = (ResultStore.read_only(results_b) if results_b else store).load(run_b)
    console.show(comparison_report(a, b))
