"""`pickfs merge FILE...`: runs from other results databases into this one (idempotent)."""

from __future__ import annotations

from pathlib import Path

import click

from pickfs import console
from pickfs.cli.common import open_store, results_option, workdir_option
from pickfs.cli.examples import examples
from pickfs.errors import PlanError, ResultsUnusable
from pickfs.store import ResultStore
from pickfs.store.merge import merge_runs


@click.command("merge", epilog=examples('pickfs merge ci-box.db dev-box.db               # into WORKDIR/results.db',
         'pickfs merge other.db --results team.db'))
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@workdir_option
@results_option
def command(files: tuple[Path, ...], workdir: str, results_path: str | None) -> None:
    """Merge the runs of other results databases into this one; merging twice adds nothing."""
    store = open_store(workdir, results_path)
    for f in files:
        if not f.is_file():
            raise PlanError(f"{f} is not a results database file", "name a results.db another pickfs wrote")
        source = ResultStore.read_only(f)  # someone else's file: read, never changed
        try:
            result = merge_runs(store, source)
        except (ValueError, TypeError) as exc:  # a damaged record (bad JSON, a run id pickfs does not make)
            why = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise ResultsUnusable(f"{f} holds a damaged run: {why}",
                                  "merge a copy pickfs wrote, or leave this file out") from None
        finally:
            source.close()
        for clash in result.clashes:
            console.warn(clash)
        if result.nothing:
            console.info(f"{f}: nothing new")
        else:
            console.info(f"{f}: {len(result.runs_added)} new run(s), {len(result.runs_extended)} run(s) extended, "
                         f"{result.trials_added} trial(s) added to {store.path}")
