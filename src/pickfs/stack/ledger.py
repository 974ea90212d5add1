"""The cleanup ledger: every resource pickfs creates is written here before it exists.

One JSON file per resource in <workdir>/ledger/, written atomically, removed once the resource
is gone. After a crash or kill -9, `pickfs cleanup` undoes what is left, newest first.

The ledger is trusted only in a directory that is pickfs's own (stack/workdir.py): entries are
neither written to nor read from a ledger or work directory another user could have planted.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pickfs.stack.signals import check_interrupt
from pickfs.stack.workdir import PRIVATE_MODE, private_dir, verify_private

_counter = itertools.count()


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str  # the name of a ResourceKind (stack/cleanup.py KINDS)
    pid: int
    created: float
    fields: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)


class Ledger:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._ready = False

    @property
    def workdir(self) -> Path:
        """The work directory this ledger belongs to: what it names must lie inside it."""
        return self.directory.parent

    def _path(self, entry_id: str) -> Path:
        return self.directory / f"{entry_id}.json"

    def _ensure(self) -> None:
        """Create the ledger directory (0700), or prove it and the work directory are pickfs's own."""
        if not self._ready:
            self.workdir.mkdir(parents=True, exist_ok=True)
            verify_private(self.workdir)
            private_dir(self.directory, PRIVATE_MODE)
            self._ready = True

    def _write(self, entry: Entry) -> None:
        self._ensure()
        tmp = self.directory / f".{entry.id}.tmp"
        data = {"id": entry.id, "kind": entry.kind, "pid": entry.pid, "created": entry.created,
                "fields": entry.fields}
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._path(entry.id))

    def record(self, kind: str, **fields: Any) -> Entry:
        check_interrupt()  # nothing new is made once Ctrl-C came in, even if its KeyboardInterrupt was dropped
        entry_id = f"{time.time_ns():020d}-{os.getpid()}-{next(_counter):06d}"
        entry = Entry(entry_id, kind, os.getpid(), time.time(), with_identity(dict(fields)))
        self._write(entry)
        return entry

    def update(self, entry: Entry, **fields: Any) -> Entry:
        new = replace(entry, fields=with_identity({**entry.fields, **fields}))
        self._write(new)
        return new

    def release(self, entry: Entry) -> None:
        try:
            self._path(entry.id).unlink()
        except FileNotFoundError:
            pass

    def entries(self) -> list[Entry]:
        """All entries, oldest first; UntrustedWorkdir when the ledger is not pickfs's own."""
        if not os.path.lexists(self.directory):
            return []
        verify_private(self.workdir)
        verify_private(self.directory)
        out = []
        for path in sorted(self.directory.glob("*.json")):
            entry = _read_entry(path)
            if entry is not None:
                out.append(entry)
        return out

    def orphans(self) -> list[Entry]:
        """Entries whose pickfs process is gone: exited, a zombie not yet reaped (a pickfs just killed), or its pid
        now taken by a process that started after the entry was written."""
        return [e for e in self.entries() if not owner_alive(e)]


def _read_entry(path: Path) -> Entry | None:
    """One entry file, never read through a symbolic link; None when unreadable or malformed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd) as fh:
            data = json.load(fh)
        fields = data.get("fields", {})
        if not isinstance(fields, dict):
            return None
        # The id is the file's own name: release() must never unlink anything but this file.
        return Entry(path.name.removesuffix(".json"), str(data["kind"]), int(data["pid"]), float(data["created"]),
                     fields)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def start_ticks(pid: int) -> int | None:
    """When a process started, in clock ticks after boot (/proc/<pid>/stat field 22); None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def with_identity(fields: dict[str, Any]) -> dict[str, Any]:
    """An entry naming a started process's pid (a process entry's child_pid) also records that process's start
    time, so a reused pid is not taken for it."""
    pid = fields.get("child_pid")
    if not isinstance(pid, int) or pid <= 0 or fields.get("start_pid") == pid:
        return fields
    return {**fields, "start_pid": pid, "start_ticks": start_ticks(pid)}


# Clocks: a process's start time read back from /proc is rounded to clock ticks and the boot time to seconds.
CLOCK_SLACK_S = 2.0


def boot_time(proc_stat: str) -> float:
    """The boot time (seconds since the epoch) from /proc/stat's text (pure); 0 when absent."""
    for line in proc_stat.splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0


def started_at(pid: int) -> float | None:
    """When a process started, in seconds since the epoch; None if gone."""
    ticks = start_ticks(pid)
    if ticks is None:
        return None
    try:
        booted = boot_time(Path("/proc/stat").read_text())
    except OSError:
        return None
    return booted + ticks / os.sysconf("SC_CLK_TCK")


def process_state(pid: int) -> str | None:
    """The state letter of /proc/<pid>/stat (R, S, D, Z...); None if there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def owner_alive(entry: Entry) -> bool:
    """The process that wrote the entry still runs: its pid exists, is not a zombie (killed, not yet reaped), and
    started before the entry was written (otherwise the pid was reused)."""
    if not pid_alive(entry.pid) or process_state(entry.pid) in ("Z", "X"):
        return False
    started = started_at(entry.pid)
    return started is None or started <= entry.created + CLOCK_SLACK_S


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
