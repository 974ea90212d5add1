"""`pickfs cleanup`: undo what a killed pickfs left attached, mounted or running."""

from __future__ import annotations

import click

from pickfs import console
from pickfs.cli.common import DEFAULT_WORKDIR, ledger_for, require_root
from pickfs.errors import PickfsError
from pickfs.stack.cleanup import undo_all


@click.command("cleanup")
@click.option("--workdir", default=DEFAULT_WORKDIR, show_default=True, help="pickfs's work directory")
def command(workdir: str) -> None:
    """Unmount, detach and remove every resource left in the ledger by a pickfs that is gone."""
    ledger = ledger_for(workdir)
    entries = ledger.orphans()
    live = len(ledger.entries()) - len(entries)
    if not entries:
        console.info("nothing to clean up" + (f" ({live} resource(s) belong to a pickfs still running)" if live else ""))
        return
    require_root("undoing mounts and loop devices", "run pickfs cleanup as root")
    problems = undo_all(ledger, entries)
    for p in problems:
        console.warn(f"could not undo {p}")
    console.info(f"undid {len(entries) - len(problems)} of {len(entries)} resource(s)")
    if problems:
        raise PickfsError(f"{len(problems)} resource(s) could not be undone", "see the lines above; then rerun pickfs cleanup")
