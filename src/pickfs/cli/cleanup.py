"""`pickfs cleanup`: undo what a killed pickfs left attached, mounted or running."""

from __future__ import annotations

import os
from pathlib import Path

import click

from pickfs import console
from pickfs.cli.common import DEFAULT_WORKDIR, ledger_for, require_root
from pickfs.cli.examples import examples
from pickfs.engine import runlock
from pickfs.errors import NotUndone, PickfsError
from pickfs.stack.cleanup import undo_entries
from pickfs.stack.workdir import check_path
from pickfs.store.postgres import is_postgres_url
from pickfs.store.results import ResultStore, default_results_path


def end_stale_runs(workdir: str, results_path: str | None = None) -> list[str]:
    """Mark interrupted every run of this work directory still 'running' that no pickfs is executing
    (killed, or ended by a full disk or an internal error); one line per run, saying what was kept."""
    path = Path(results_path) if results_path else default_results_path(workdir)
    if is_postgres_url(str(path)) or not path.is_file():
        return []
    try:
        store = ResultStore(path)
        out = []
        for row in store.list_runs():
            if row.status != "running":
                continue
            target = store.load(row.id).plan.get("target") or {}
            if os.path.normpath(str(target.get("workdir", ""))) != os.path.normpath(workdir):
                continue  # another work directory's run: its own cleanup (and lock) decide
            if runlock.is_live(Path(workdir), row.id):
                continue
            store.set_status(row.id, "interrupted")
            out.append(f"run {row.id} marked interrupted ({row.trials_ok} trials kept); "
                       f"continue with: {resume_command(workdir, row.id)}")
        return out
    except (PickfsError, OSError, AttributeError, TypeError) as exc:
        msg = exc.one_line() if isinstance(exc, PickfsError) else str(exc)
        return [f"the runs in {path} were not checked: {msg}"]


def resume_command(workdir: str, run_id: str) -> str:
    """What continues a run: its search's, when it is a stage of one."""
    from pickfs.search.stages import search_of_run  # deferred: the search loads the engine, needed only here

    search = search_of_run(workdir, run_id)
    if search is not None:
        return f"pickfs search --resume {search}" + ("" if workdir == DEFAULT_WORKDIR else f" --workdir {workdir}")
    return f"pickfs run --resume {run_id}"


@click.command("cleanup", epilog=examples('pickfs cleanup',
         'pickfs cleanup --workdir /var/tmp/my-pickfs'))
@click.option("--workdir", default=DEFAULT_WORKDIR, show_default=True, help="pickfs's work directory")
@click.option("--results", "results_path", default=None,
              help="the results file whose runs of this work directory a killed pickfs left 'running' "
                   "[WORKDIR/results.db]")
def command(workdir: str, results_path: str | None) -> None:
    """Unmount, detach and remove every resource left in the ledger by a pickfs that is gone."""
    if not os.path.lexists(check_path(workdir)):
        console.info(f"nothing to clean up ({workdir} does not exist)")
        return
    ledger = ledger_for(workdir)
    entries = ledger.orphans()
    live = len(ledger.entries()) - len(entries)
    if entries:
        require_root("undoing mounts and loop devices", "run pickfs cleanup as root")
    for line in end_stale_runs(workdir, results_path):
        console.info(line)
    if not entries:
        console.info("nothing to clean up" + (f" ({live} resource(s) belong to a pickfs still running)" if live else ""))
        return
    report = undo_entries(ledger, entries)
    for line in report.refused:
        console.warn(f"not undone: {line}")
    for line in report.failed:
        console.warn(f"could not undo {line}")
    console.info(f"undid {report.undone} of {len(entries)} resource(s)")
    if report.failed:
        raise PickfsError(f"{len(report.failed)} resource(s) could not be undone",
                          "see the lines above; then rerun pickfs cleanup")
    if report.refused:
        raise NotUndone(f"{len(report.refused)} ledger entr{'y' if len(report.refused) == 1 else 'ies'} left alone: "
                        "they name what pickfs cannot prove it made",
                        "check the lines above, then delete those ledger files")
