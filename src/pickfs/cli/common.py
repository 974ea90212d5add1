"""Options and helpers shared by commands."""

from __future__ import annotations

import os
from pathlib import Path

import click

from pickfs.errors import PlanError
from pickfs.model import Target
from pickfs.store import ResultStore
from pickfs.usecases.workspace import clean_orphans, ledger_for, open_store, require_root

__all__ = ["clean_orphans", "ledger_for", "open_store", "require_root"]  # where the commands have always found them

DEFAULT_WORKDIR = os.environ.get("PICKFS_WORKDIR", Target().workdir)

workdir_option = click.option("--workdir", default=DEFAULT_WORKDIR, show_default=True,
                              help="pickfs's own work directory (images, mount points, ledger, results)")
results_option = click.option("--results", "results_path", type=click.Path(path_type=str), default=None,
                              help="results database: a file (default: WORKDIR/results.db, or $PICKFS_RESULTS), "
                                   "or a PostgreSQL URL, postgresql://USER@HOST/DB")


def read_store(workdir: str, results_path: Path | str | None) -> ResultStore:
    """The results database of a command that only reads it: nothing is created or changed, and one named
    (--results, $PICKFS_RESULTS) must exist."""
    from pickfs.store.postgres import is_postgres_url  # deferred: psycopg (store/postgres.py loads it)

    spec = str(results_path or os.environ.get("PICKFS_RESULTS") or "")
    if spec and not is_postgres_url(spec) and not os.path.lexists(spec):
        flag = "--results" if results_path else "$PICKFS_RESULTS"
        raise PlanError(f"no results database at {spec} ({flag})",
                        "check the path: a run saves its results where --results names, else WORKDIR/results.db")
    return open_store(workdir, results_path, read_only=True)
