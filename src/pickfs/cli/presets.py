"""`pickfs presets`: the named configurations and whether this machine can build them."""

from __future__ import annotations

import click
from rich.table import Table

from pickfs import console
from pickfs.analysis.views import short_flag
from pickfs.cli.examples import examples
from pickfs.risks import config_risks
from pickfs.stack.filesystems import unavailable_reason
from pickfs.stack.presets import PRESETS, RAW_CONFIG


@click.command("presets", epilog=examples('pickfs presets',
         'pickfs run --fs ext4,xfs-tuned   # presets by name'))
def command() -> None:
    """List filesystem presets, their options, and what this machine lacks."""
    table = Table(title_justify="left")
    for col in ("preset", "mkfs options", "mount options", "available here", "description"):
        table.add_column(col, overflow="fold")
    for p in (*PRESETS.values(), RAW_CONFIG):
        reason = unavailable_reason(p.fstype)
        flags = ", ".join(short_flag(r) for r in config_risks(p))
        desc = p.description + (f" [⚠ {flags}]" if flags else "")
        table.add_row(p.name, " ".join(p.mkfs_options) or "-", ",".join(p.mount_options) or "-",
                      "yes" if reason is None else f"no: {reason}", desc)
    console.show(table)
