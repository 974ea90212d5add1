"""What a run stands on before anything is built: its results database, its work directory's ledger, root."""

from __future__ import annotations

import os
from pathlib import Path

from pickfs.errors import NeedsRoot, NotFound
from pickfs.stack.cleanup import undo_all
from pickfs.stack.ledger import Ledger
from pickfs.stack.workdir import prepare
from pickfs.store import ResultStore
from pickfs.store.results import default_results_path


def open_store(workdir: str, results_path: Path | str | None, read_only: bool = False) -> ResultStore:
    """The results database; as root, the work directory holding it is made or proven pickfs's own first.

    `read_only` (commands that only read): nothing is created or changed, not the work directory, not the file,
    not a -wal or -shm beside it; a missing file is NotFound."""
    from pickfs.store.postgres import PostgresStore, is_postgres_url  # deferred: psycopg loads only when needed

    spec = str(results_path or os.environ.get("PICKFS_RESULTS") or "")
    if is_postgres_url(spec):  # a PostgreSQL team store
        return PostgresStore(spec)
    path = Path(results_path) if results_path else default_results_path(workdir)
    if read_only:
        if not os.path.lexists(path):
            raise NotFound(f"no results database at {path}", "start a run with: pickfs run (or pass --results PATH)")
        return ResultStore.read_only(path)
    if os.geteuid() == 0 and Path(path).parent == Path(workdir):
        prepare(workdir)
    return ResultStore(path)


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
