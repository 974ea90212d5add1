"""A configuration as a setup to apply (pure): the mkfs command, the fstab line, a udev rule for its I/O scheduler and
the database's settings, for the user's own device (DEVICE) and data directory. The answer of a run (every report)
and of a search (`pickfs search`) give it alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pickfs.fsfacts import facts_of, has_filesystem, in_memory
from pickfs.model import FsConfig, WorkloadSpec

DEVICE = "/dev/DEVICE"
DATA_DIR = "/var/lib/DATABASE"
RUN_LENGTH = frozenset({"duration", "transactions", "scale", "rate", "clients", "threads", "arrivals",
                        "latency_limit", "warehouses", "time", "tables", "table_size"})  # not database settings
UDEV_FILE = "/etc/udev/rules.d/60-scheduler.rules"


@dataclass(frozen=True)
class Setup:
    """The lines to paste. `mkfs` None: nothing to make (a filesystem in memory, the raw device)."""

    mkfs: str | None
    fstab: str
    udev: str | None
    database: str | None
    database_settings: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"mkfs": self.mkfs, "fstab": self.fstab, "udev": self.udev, "database": self.database,
                "database_settings": dict(self.database_settings)}

    def lines(self) -> list[str]:
        """The setup as the terminal and the search's report show it, one line each."""
        out = [f"mkfs:  {self.mkfs}"] if self.mkfs else []
        out.append(f"fstab: {self.fstab}")
        if self.udev:
            out.append(f"udev ({UDEV_FILE}): {self.udev}")
        if self.database_settings:
            settings = ", ".join(f"{k}={v}" for k, v in self.database_settings.items())
            out.append(f"{self.database or 'database'} settings as measured: {settings}")
        return out


def setup_of(config: FsConfig, spec: WorkloadSpec, database: str | None) -> Setup:
    """The configuration as commands and lines to paste, with the workload's database settings (its run length
    left out)."""
    options = ",".join(config.mount_options) or "defaults"
    made = has_filesystem(config.fstype) and not in_memory(config.fstype)
    mkfs = " ".join([f"mkfs.{config.fstype}", *config.mkfs_options, DEVICE]) if made else None
    source = DEVICE if made else config.fstype
    udev = (f'ACTION=="add|change", KERNEL=="{DEVICE.rsplit("/", 1)[-1]}", '
            f'ATTR{{queue/scheduler}}="{config.scheduler}"') if config.scheduler else None
    settings = {k: v for k, v in sorted({**dict(spec.settings), **dict(config.database)}.items()) if k not in RUN_LENGTH}
    return Setup(mkfs, f"{source}  {DATA_DIR}  {config.fstype}  {options}  0  {facts_of(config.fstype).fsck_pass}",
                 udev, database, settings)


def what_it_is(config: FsConfig) -> str:
    """What a configuration is, in a few words: its filesystem with its mkfs and mount options and scheduler."""
    parts = [config.fstype]
    parts.append(f"mkfs {' '.join(config.mkfs_options)}" if config.mkfs_options else "mkfs defaults")
    parts.append(f"mount {','.join(config.mount_options)}" if config.mount_options else "mount defaults")
    if config.scheduler:
        parts.append(f"scheduler {config.scheduler}")
    if config.database:
        parts.append(", ".join(f"{k}={v}" for k, v in config.database))
    return ", ".join(parts)
