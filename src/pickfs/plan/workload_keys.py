"""The settings of each registered workload as plan keys: their names, shapes and defaults come from the
workload classes themselves; their meaning, and the choices a setting's own check accepts, from the tables
here (a test checks every setting is described and every listed choice is accepted)."""

from __future__ import annotations

from typing import Any

from pickfs.databases.values import SHAPES
from pickfs.plan.schema import Key, Section, Span, toml_text
from pickfs.services import REGISTRY as SERVICES
from pickfs.workloads import REGISTRY
from pickfs.workloads.base import Workload
from pickfs.workloads.fio import SYNC_METHODS
from pickfs.workloads.latency import ARRIVALS, RATE_DEFAULTS
from pickfs.workloads.pgbench import MODES
from pickfs.workloads.sqlite_tpcb import JOURNAL_MODES, SYNCHRONOUS
from pickfs.workloads.sysbench_oltp import TESTS
from pickfs.workloads.tpcc import BACKENDS


def setting_shape(cls: type[Workload], key: str) -> str:
    """The shape a workload setting's value must have: 'table' where its default is a table, 'list' (a value
    or a list of values) where it is a list, else 'value' (a string, a number or true/false)."""
    default = cls.defaults.get(key)
    if isinstance(default, dict):
        return "table"
    if isinstance(default, list) or key in cls.list_settings:  # a list although the default is one value
        return "list"
    return "value"


# What each setting means, by key ("workload key" where one workload's setting means something else).
SETTING_TEXT: dict[str, str] = {
    "duration": "the length of one measured run, in seconds or as \"10s\"",
    "scale": "the data's size in pgbench scale steps (100,000 accounts each)",
    "transactions": "a run of this many transactions instead of a duration (0: by duration)",
    "journal_mode": "SQLite's journal mode",
    "synchronous": "SQLite's synchronous setting",
    "page_size": "SQLite's page size in bytes, set when the database is made",
    "mode": "pgbench's built-in script",
    "clients": "concurrent clients",
    "threads": "client threads",
    "log_sampling": "share of transactions written to the per-transaction latency log, within (0, 1]",
    "test": "the sysbench OLTP test",
    "tables": "tables of the sysbench data",
    "table_size": "rows per table",
    "backend": "the database the transactions run on",
    "warehouses": "TPC-C warehouses",
    "scale_down": "the TPC-C data divided by this (a warehouse's rows, items and stock)",
    "forced_writes": "Firebird's forced writes (synchronous writes of each page), on or off",
    "rate": "fixed rate (open loop): transactions due per second, e.g. 400 or \"400/s\" (0: as fast as it goes)",
    "arrivals": "fixed rate: how the transactions' start times are spread",
    "latency_limit": "fixed rate: a transaction later than this is skipped, in seconds or as \"50ms\" (0: none)",
    "size": "the files' total size",
    "files": "number of files",
    "block_size": "size of each read and write (a multiple of 512 bytes)",
    "read_share": "share of operations that read, from 0 to 1",
    "fsync_every": "writes between syncs (0: none)",
    "sync": "the sync call",
    "pattern": "the access pattern",
    "direct": "O_DIRECT: bypass the page cache",
    "iodepth": "I/Os in flight per thread",
    "keep_cache": "keep the files' page cache between runs as the workload left it (false: cold reads)",
    "methods": "the sync methods to time, each in turn",
    "block_sizes": "the write sizes to time, each in turn (4K, 8K or 16K)",
    "layout": "prewritten: a zero-filled file rewritten, as PostgreSQL recycles WAL segments; append: a growing "
              "file",
    "file_size": "the size of each file",
    "source": 'the tree: "auto" (the installed linux-source, else generated), "generated", or a tarball\'s path',
    "seed": "seed of the generated data",
    "reflink": "cp's --reflink: auto clones where the filesystem can, never copies the data",
    "packages": "packages in the package database",
    "queries": "passes of queries over the database",
    "total": "the folder's total size",
    "command": "the command to time: a shell line, or a list of arguments",
    "setup": "run once before the warm-up, not timed (create a schema, install dependencies)",
    "server": "a database server to start on the filesystem under test for the command",
    "env": "more environment variables for the command",
    "timeout": "the longest one run may take",
    "run_as": "a user to run the command and its setup as (empty: root)",
    "check": "pickfs crashtest: run on each power-cut state; exit status 0 means the data is consistent",
    # database server settings (PostgreSQL, MariaDB/MySQL)
    "shared_buffers": "PostgreSQL shared_buffers",
    "checkpoint_timeout": "PostgreSQL checkpoint_timeout",
    "max_wal_size": "PostgreSQL max_wal_size",
    "fsync": "PostgreSQL fsync",
    "synchronous_commit": "PostgreSQL synchronous_commit",
    "wal_sync_method": "PostgreSQL wal_sync_method",
    "full_page_writes": "PostgreSQL full_page_writes",
    "data_sync_retry": "PostgreSQL data_sync_retry (on: retry a failed data-file fsync instead of stopping)",
    "innodb_buffer_pool_size": "InnoDB buffer pool size",
    "innodb_flush_log_at_trx_commit": "InnoDB's log flush at each commit",
    "innodb_flush_method": "InnoDB's flush method",
    "sync_binlog": "MariaDB/MySQL sync_binlog",
    "innodb_doublewrite": "InnoDB's doublewrite buffer",
    "log_bin": "MariaDB/MySQL binary log",
    "tpcc journal_mode": "SQLite's journal mode (backend sqlite)",
    "tpcc synchronous": "SQLite's synchronous setting (backend sqlite)",
    "firebird-tpcb backend": "fixed: Firebird's embedded engine",
    "firebird-tpcb clients": "fixed: one client",
    "tree files": "files of the generated tree",
    "bigfiles files": "number of images",
    "wal file_size": "the log file's size (a PostgreSQL WAL segment)",
    "wal duration": "seconds per sync method and block size",
    "mediumfiles seed": "seed of the generated files",
    "sysbench-oltp latency_limit": "fixed rate: sysbench has no latency limit, so none but 0",
    "fileio rate": "fixed rate (open loop): I/Os due per second, e.g. 400 or \"400/s\"; reads or writes only (read_share 0 or 1), fsync_every 0, threads 1 (0: as fast as it goes)",
    "fileio arrivals": "fixed rate: how the I/Os' start times are spread",
    "fileio latency_limit": "fixed rate: fio cannot skip an I/O, so none but 0",
    "fileio-first-touch rate": "fixed rate (open loop): I/Os due per second, e.g. 400 or \"400/s\"; reads or writes only (read_share 0 or 1), fsync_every 0, threads 1 (0: as fast as it goes)",
    "fileio-first-touch arrivals": "fixed rate: how the I/Os' start times are spread",
    "fileio-first-touch latency_limit": "fixed rate: fio cannot skip an I/O, so none but 0",
}

# The values a setting accepts, where it takes one of a list ("workload key" for one workload's own).
SETTING_CHOICES: dict[str, tuple[str, ...]] = {
    "journal_mode": JOURNAL_MODES,
    "synchronous": SYNCHRONOUS,
    "mode": tuple(MODES),
    "test": TESTS,
    "backend": BACKENDS,
    "firebird-tpcb backend": ("firebird",),
    "arrivals": ARRIVALS,
    "pgbench arrivals": ("poisson",),  # pgbench's own -R
    "sysbench-oltp arrivals": ("poisson",),  # sysbench's own --rate
    "forced_writes": ("on", "off"),
    "sync": ("fsync", "fdatasync"),
    "pattern": ("random", "sequential"),
    "methods": tuple(SYNC_METHODS),
    "layout": ("prewritten", "append"),
    "reflink": ("auto", "never"),
    "server": ("", *SERVICES),
}

# The range a setting's own check enforces, where it has one ("workload key" for one workload's own).
SETTING_SPANS: dict[str, Span] = {
    "scale": Span(1), "clients": Span(1), "threads": Span(1), "tables": Span(1), "table_size": Span(1),
    "warehouses": Span(1), "scale_down": Span(1), "files": Span(1), "iodepth": Span(1), "packages": Span(1),
    "queries": Span(1), "fsync_every": Span(0), "read_share": Span(0, 1), "log_sampling": Span(0, 1, low_open=True),
    "firebird-tpcb clients": Span(1, 1), "sysbench-oltp latency_limit": Span(0, 0),
    "fileio latency_limit": Span(0, 0), "fileio-first-touch latency_limit": Span(0, 0),
}

# A setting's type in words where its default's type does not say it.
SETTING_TYPES: dict[str, str] = {
    "duration": "duration", "latency_limit": "duration", "timeout": "duration", "rate": "number",
    "size": "size", "block_size": "size", "file_size": "size", "total": "size", "block_sizes": "list of sizes",
    "methods": "list of strings", "env": "table of strings", "command": "string or list of strings",
    "check": "string or list of strings",
}


def _lookup(table: dict[str, Any], cls: type[Workload], key: str) -> Any:
    return table.get(f"{cls.name} {key}", table.get(key))


def _type_words(cls: type[Workload], key: str, default: Any) -> str:
    words = _lookup(SETTING_TYPES, cls, key)
    if words:
        return str(words)
    if default is None:
        return "string"
    return {bool: "true/false", int: "whole number", float: "number", str: "string"}.get(type(default), "string")


def setting_keys(cls: type[Workload]) -> tuple[Key, ...]:
    """Every setting `cls` accepts, as plan keys: its own defaults first, then the fixed-rate settings and the
    database server settings it takes beside them."""
    extra = sorted(cls.setting_names() - set(cls.defaults), key=lambda k: (k not in RATE_DEFAULTS, k))
    keys = []
    for key in (*cls.defaults, *extra):
        default = cls.defaults.get(key, RATE_DEFAULTS.get(key))
        choices = _lookup(SETTING_CHOICES, cls, key) or ()
        shape = SHAPES.get(key)
        if shape is not None and not choices:
            choices = shape.choices
        shown = "the server's own" if default is None else ""
        text = _lookup(SETTING_TEXT, cls, key) or ""
        if shape is not None and not shape.choices:
            text = f"{text} ({shape.describe()})"
        keys.append(Key(key, _type_words(cls, key, default), text,
                        default=default, default_text=shown, choices=tuple(choices),
                        several=setting_shape(cls, key) == "list", span=_lookup(SETTING_SPANS, cls, key),
                        example=f"{key} = {toml_text(default) or '...'}"))
    return tuple(keys)


def workload_section(cls: type[Workload]) -> Section:
    """The [[workload]] keys of one workload, under its name."""
    return Section(f"Workload {cls.name}", "workload", setting_keys(cls), intro=cls.description, array=True)


def workload_sections() -> tuple[Section, ...]:
    """One section per registered workload, in registration order."""
    return tuple(workload_section(cls) for cls in REGISTRY.values())
