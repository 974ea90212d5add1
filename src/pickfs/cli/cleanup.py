"""`pickfs cleanup`: undo what a killed pickfs left attached, mounted or running."""

from __future__ import annotations

import os

import click

from pickfs import console
from pickfs.cli.common import DEFAULT_WORKDIR, ledger_for, require_root
from pickfs.cli.examples import examples
from pickfs.errors import NotUndone, PickfsError
from pickfs.stack.cleanup import undo_entries
from pickfs.stack.workdir import check_path


@click.command("cleanup", epilog=examples('pickfs cleanup',
         'pickfs cleanup --workdir /var/tmp/my-pickfs'))
@click.option("--workdir", default=DEFAULT_WORKDIR, show_default=True, help="pickfs's work directory")
def command(workdir: str) -> None:
    """Unmount, detach and remove every resource left in the ledger by a pickfs that is gone."""
    if not os.path.lexists(check_path(workdir)):
        console.info(f"nothing to clean up ({workdir} does not exist)")
        return
    ledger = ledger_for(workdir)
    entries = ledger.orphans()
    live = len(ledger.entries()) - len(entries)
    if not entries:
        console.info("nothing to clean up" + (f" ({live} resource(s) belong to a pickfs still running)" if live else ""))
        return
    require_root("undoing mounts and loop devices", "run pickfs cleanup as root")
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
