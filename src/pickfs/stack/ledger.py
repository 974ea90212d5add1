"""The cleanup ledger: every resource pickfs creates is written here before it exists.

One JSON file per resource in <workdir>/ledger/, written atomically, removed once the resource
is gone. After a crash or kill -9, `pickfs cleanup` undoes what is left, newest first.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

_counter = itertools.count()


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str  # image | loop | mount | dir | scheduler | process
    pid: int
    created: float
    fields: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)


class Ledger:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, entry_id: str) -> Path:
        return self.directory / f"{entry_id}.json"

    def _write(self, entry: Entry) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{entry.id}.tmp"
        data = {"id": entry.id, "kind": entry.kind, "pid": entry.pid, "created": entry.created,
                "fields": entry.fields}
        with open(tmp, "w") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._path(entry.id))

    def record(self, kind: str, **fields: Any) -> Entry:
        entry_id = f"{time.time_ns():020d}-{os.getpid()}-{next(_counter):06d}"
        entry = Entry(entry_id, kind, os.getpid(), time.time(), dict(fields))
        self._write(entry)
        return entry

    def update(self, entry: Entry, **fields: Any) -> Entry:
        new = replace(entry, fields={**entry.fields, **fields})
        self._write(new)
        return new

    def release(self, entry: Entry) -> None:
        try:
            self._path(entry.id).unlink()
        except FileNotFoundError:
            pass

    def entries(self) -> list[Entry]:
        """All entries, oldest first."""
        if not self.directory.is_dir():
            return []
        out = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            out.append(Entry(data["id"], data["kind"], data["pid"], data["created"], data.get("fields", {})))
        return out

    def orphans(self) -> list[Entry]:
        """Entries whose pickfs process is gone."""
        return [e for e in self.entries() if not pid_alive(e.pid)]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
