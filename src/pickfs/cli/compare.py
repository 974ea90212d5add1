"""`pickfs compare A B`: two runs side by side (two machines, two dates, before and after)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from pickfs import console
from pickfs.cli.common import read_store, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.errors import PlanError, UntrustedPath
from pickfs.report.json_text import strict_json
from pickfs.safepaths import check_target, write_export
from pickfs.store import ResultStore


@click.command("compare", epilog=examples('pickfs compare RUN_A RUN_B',
         'pickfs compare RUN_A RUN_B --results-b ci-box.db  # B copied from another machine',
         'pickfs compare RUN_A RUN_B --json -              # for scripts'))
@click.argument("run_a")
@click.argument("run_b")
@click.option("--results-b", type=click.Path(path_type=Path, exists=True),
              help="the results database run B is in, when it is another (e.g. copied from another machine)")
@click.option("--json", "json_path", type=click.Path(path_type=Path),
              help="write the comparison as JSON ('-': stdout): the answers, what one run did not record, the cells "
                   "with B against A, the settings that differ, the rankings, the machines' differences")
@workdir_option
@results_option
def command(run_a: str, run_b: str, results_b: Path | None, json_path: Path | None, workdir: str,
            results_path: str | None) -> None:
    """Two runs side by side: each run's answer first, then matching cells with B against A as a speed factor
    (above 1 faster in B) and its significance; what one run did not record, said once; each setting that differs
    once; and each run's ranking."""
    from pickfs.report.comparison import comparison_dict, comparison_report  # deferred: numpy/scipy via stats

    if json_path is not None and str(json_path) != "-":
        try:
            check_target(json_path, "--json")  # before the runs are analysed: a path that cannot take them
        except UntrustedPath as exc:
            raise PlanError(exc.message, exc.hint) from None

    store = read_store(workdir, results_path)
    a = store.load(run_a)
    if results_b and not os.path.lexists(results_b):
        raise PlanError(f"no results database at {results_b} (--results-b)", "check the path of run B's database")
    b = (ResultStore.read_only(results_b) if results_b else store).load(run_b)
    if json_path is None:
        console.show(comparison_report(a, b))
        return
    text = strict_json(comparison_dict(a, b))
    if str(json_path) == "-":
        click.echo(text, nl=False)
    else:
        write_export(json_path, text.encode(), "--json")
        console.info(f"json written to {json_path}")
