"""`pickfs compare A B`: two runs side by side (two machines, two dates, before and after)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from pickfs import console
from pickfs.cli.common import read_store, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.errors import PlanError
from pickfs.store import ResultStore


@click.command("compare", epilog=examples('pickfs compare RUN_A RUN_B',
         'pickfs compare RUN_A RUN_B --results-b ci-box.db  # B copied from another machine'))
@click.argument("run_a")
@click.argument("run_b")
@click.option("--results-b", type=click.Path(path_type=Path, exists=True),
              help="the results database run B is in, when it is another (e.g. copied from another machine)")
@workdir_option
@results_option
def command(run_a: str, run_b: str, results_b: Path | None, workdir: str, results_path: str | None) -> None:
    """Matching cells of two runs side by side, with ratios and significance; the settings that
    differ, named, and each run's ranking."""
    from pickfs.report.comparison import comparison_report  # deferred: numpy/scipy via stats

    store = read_store(workdir, results_path)
    a = store.load(run_a)
    if results_b and not os.path.lexists(results_b):
        raise PlanError(f"no results database at {results_b} (--results-b)", "check the path of run B's database")
    b = (ResultStore.read_only(results_b) if results_b else store).load(run_b)
    console.show(comparison_report(a, b))
