"""Options and helpers shared by commands."""

from __future__ import annotations

import os
from pathlib import Path

import click

from pickfs.errors import NeedsRoot, NotFound, PlanError
from pickfs.model import Target
from pickfs.stack.cleanup import undo_all
from pickfs.stack.ledger import Ledger
from pickfs.stack.workdir import prepare
from pickfs.store import ResultStore
from pickfs.store.results import default_results_path

DEFAULT_WORKDIR = os.environ.get("PICKFS_WORKDIR", Target().workdir)

workdir_option = click.option("--workdir", default=DEFAULT_WORKDIR, show_default=True,
                              help="pickfs's own work directory (images, mount points, ledger, results)")
results_option = click.option("--results", "results_path", type=click.Path(path_type=str), default=None,
                              help="results database: a file (default: WORKDIR/results.db, or $PICKFS_RESULTS), "
                                   "or a PostgreSQL URL, postgresql://USER@HOST/DB")


def open_store(workdir: str, results_path: Path | str | None, read_only: bool = False) -> ResultStore:
    """The results database; as root, the work directory holding it is made or proven pickfs's own first.

    `read_only` (commands that only read): nothing is created or changed, not the work directory, not the file,
    not a -wal or -shm beside it; a missing file is NotFound."""
    # --- fleet: a PostgreSQL team store (issue 16)
    from pickfs.store.postgres import PostgresStore, is_postgres_url

    spec = str(results_path or os.environ.get("PICKFS_RESULTS") or "")
    if is_postgres_url(spec):
        return PostgresStore(spec)
    # --- end fleet
    path = Path(results_path) if results_path else default_results_path(workdir)
    if read_only:
        if not os.path.lexists(path):
            raise NotFound(f"no results database at {path}", "start a run with: pickfs run (or pass --results PATH)")
        return ResultStore.read_only(path)
    if os.geteuid() == 0 and Path(path).parent == Path(workdir):
        prepare(workdir)
    return ResultStore(path)


def read_store(workdir: str, results_path: Path | str | None) -> ResultStore:
    """The results database of a command that only reads it: nothing is created or changed, and one named
    (--results, $PICKFS_RESULTS) must exist."""
    from pickfs.store.postgres import is_postgres_url

    spec = str(results_path or os.environ.get("PICKFS_RESULTS") or "")
    if spec and not is_postgres_url(spec) and not os.path.lexists(spec):
        flag = "--results" if results_path else "$PICKFS_RESULTS"
        raise PlanError(f"no results database at {spec} ({flag})",
                        "check the path: a run saves its results where --results names, else WORKDIR/results.db")
    return open_store(workdir, results_path, read_only=True)


def ledger_for(workdir: str) -> Ledger:
    """The ledger of a work directory that pickfs made (root-owned, 0711, ledger 0700) or proved its own.

    UntrustedWorkdir (exit 2) for a relative path or one with control characters, and for a work
    directory or ledger that is a symbolic link, owned by another user, or group/world-writable.
    """
    return Ledger(prepare(workdir) / "ledger")


def require_root(why: str, alternative: str) -> None:
    if os.geteuid() != 0:
        raise NeedsRoot(f"{why} needs root", alternative)


def clean_orphans(ledger: Ledger) -> tuple[int, list[str]]:
    """Undo what an earlier, killed pickfs left behind."""
    orphans = ledger.orphans()
    return len(orphans), undo_all(ledger, orphans)
