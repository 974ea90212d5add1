"""The values each database setting may take, checked before any server sees them (pure).

A setting's value ends up in a server's configuration file or on its command line: a value that
is not of its setting's shape (a space, a quote, a `$(...)`, a newline, a second option) is
refused here, with the shape it should have, instead of reaching the server or its tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pickfs.errors import PlanError

_BOOL = ("on", "off", "true", "false", "yes", "no", "1", "0")


@dataclass(frozen=True)
class ValueShape:
    """The shape of one setting's values: a pattern (whole value, case-insensitive or not) or a choice."""

    example: str
    pattern: str = ""
    choices: tuple[str, ...] = ()
    case_sensitive: bool = False

    def accepts(self, text: str) -> bool:
        if self.choices:
            return (text if self.case_sensitive else text.lower()) in self.choices
        flags = 0 if self.case_sensitive else re.IGNORECASE
        return re.fullmatch(self.pattern, text, flags) is not None

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return f"of the form {self.example}"


_PG_SIZE = ValueShape("128MB", r"[0-9]{1,12}(B|kB|MB|GB|TB)?", case_sensitive=True)
_MY_SIZE = ValueShape("512M", r"[0-9]{1,15}[KMGT]?")

# Every database setting a workload can pass to a database, by key (the keys are distinct across databases).
SHAPES: dict[str, ValueShape] = {
    # PostgreSQL
    "shared_buffers": _PG_SIZE,
    "max_wal_size": _PG_SIZE,
    "checkpoint_timeout": ValueShape("5min", r"[0-9]{1,9}(us|ms|s|min|h|d)?", case_sensitive=True),
    "fsync": ValueShape("on", choices=_BOOL),
    "full_page_writes": ValueShape("on", choices=_BOOL),
    "synchronous_commit": ValueShape("on", choices=(*_BOOL, "local", "remote_write", "remote_apply")),
    "wal_sync_method": ValueShape("fdatasync", choices=("fsync", "fdatasync", "open_sync", "open_datasync",
                                                         "fsync_writethrough")),
    # MariaDB / MySQL
    "innodb_buffer_pool_size": _MY_SIZE,
    "innodb_flush_log_at_trx_commit": ValueShape("1", choices=("0", "1", "2", "3")),
    "innodb_flush_method": ValueShape("O_DIRECT", choices=("fsync", "o_dsync", "littlesync", "nosync", "o_direct",
                                                            "o_direct_no_fsync", "0", "1", "2", "3", "4", "5")),
    "sync_binlog": ValueShape("1", r"[0-9]{1,10}"),
    "innodb_doublewrite": ValueShape("on", choices=(*_BOOL, "fast")),
    "log_bin": ValueShape("binlog", r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"),  # a base name in the data directory
    # Firebird
    "forced_writes": ValueShape("on", choices=_BOOL),
    # SQLite
    "synchronous": ValueShape("FULL", choices=("off", "normal", "full", "extra", "0", "1", "2", "3")),
    "journal_mode": ValueShape("WAL", choices=("delete", "truncate", "persist", "memory", "wal", "off")),
}


def value_text(value: Any) -> str:
    """A setting's value as the server reads it (TOML's true/false as on/off)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def value_problem(key: str, value: Any) -> str | None:
    """Why `value` cannot be given to the database setting `key` (None: it can, or `key` is not one)."""
    shape = SHAPES.get(key)
    if shape is None or value is None or value == "":
        return None
    if isinstance(value, float) or not isinstance(value, (str, int, bool)):
        return f"{key} = {value!r} is not a value of this setting: it takes {shape.describe()}"
    text = value_text(value)
    if not shape.accepts(text):
        return f"{key} = {text!r} is not a value of this setting: it takes {shape.describe()}"
    return None


def check_values(settings: dict[str, Any], where: str) -> None:
    """PlanError for the first database setting in `settings` whose value is not of its shape."""
    for key, value in settings.items():
        problem = value_problem(key, value)
        if problem:
            raise PlanError(f"{where} {problem}", f"e.g. {key} = {SHAPES[key].example}")
