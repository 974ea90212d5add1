"""Which settings trade safety for speed, and what each risks, in one line (pure)."""

from __future__ import annotations

from pickfs.model import FsConfig, WorkloadSpec

_MOUNT_RISKS = {
    "nobarrier": "nobarrier: the disk's volatile cache is not flushed at commit; a power cut can lose "
                 "acknowledged commits and corrupt the filesystem",
    "barrier=0": "barrier=0: the disk's volatile cache is not flushed at commit; a power cut can lose "
                 "acknowledged commits and corrupt the filesystem",
    "data=writeback": "data=writeback: after a power cut, recently written files can hold stale blocks",
    "journal_async_commit": "journal_async_commit: a power cut can leave a journal commit half written",
    "async": "",  # the default
}


def config_risks(config: FsConfig) -> list[str]:
    out = []
    if config.fstype == "tmpfs":
        out.append("tmpfs: in memory; everything is lost on a power cut or reboot")
    if config.fstype == "ext2" or "^has_journal" in " ".join(config.mkfs_options):
        out.append("no journal: after a power cut the filesystem needs a full fsck and recent metadata can be lost")
    for opt in config.mount_options:
        risk = _MOUNT_RISKS.get(opt)
        if risk:
            out.append(risk)
    return out


_POSTGRES_RISKS = {
    ("fsync", "off"): "fsync=off: PostgreSQL never forces writes to disk; a power cut can lose acknowledged "
                      "commits and corrupt the database",
    ("synchronous_commit", "off"): "synchronous_commit=off: commits are acknowledged before their WAL is on disk; "
                                   "a power cut loses the last ones (the database stays consistent)",
    ("full_page_writes", "off"): "full_page_writes=off: a torn page after a power cut can corrupt the database",
}


def _innodb_risks(spec: WorkloadSpec) -> list[str]:
    out = []
    flush = str(spec.get("innodb_flush_log_at_trx_commit", "1"))
    if flush in ("0", "2"):
        out.append(f"innodb_flush_log_at_trx_commit={flush}: the log is flushed about once a second, not at "
                   "commit; a power cut can lose the last second of acknowledged commits")
    if str(spec.get("innodb_doublewrite", "")).lower() in ("0", "off"):
        out.append("innodb_doublewrite=0: a torn page after a power cut can corrupt the database")
    if str(spec.get("sync_binlog", "")) == "0" and str(spec.get("log_bin", "")).lower() not in ("", "none", "0", "off"):
        out.append("sync_binlog=0 with a binary log: the binlog can lose transactions the tables kept")
    return out


def database_of(spec: WorkloadSpec) -> str | None:
    """The database a workload drives with these settings (what the registry knows; recorded with each run)."""
    from pickfs.workloads import REGISTRY

    cls = REGISTRY.get(spec.name)
    return cls.database_for(spec) if cls else None


def workload_risks(spec: WorkloadSpec) -> list[str]:
    return risks_of(spec, database_of(spec))


def risks_of(spec: WorkloadSpec, backend: str | None) -> list[str]:
    """What the settings of a workload on this database risk (pure)."""
    out = []
    if backend == "firebird" and str(spec.get("forced_writes", "on")) == "off":
        out.append("forced_writes=off: Firebird leaves writes to the operating system's cache; a power cut can "
                   "lose acknowledged commits and corrupt the database")
    if backend == "mariadb":
        out += _innodb_risks(spec)
    if backend == "postgresql":
        for (key, bad), risk in _POSTGRES_RISKS.items():
            if str(spec.get(key, "")).lower() == bad:
                out.append(risk)
    if backend == "sqlite":
        sync, mode = spec.get("synchronous"), spec.get("journal_mode")
        if sync == "OFF":
            out.append("synchronous=OFF: SQLite acknowledges commits before they reach the disk; "
                       "a power cut can lose them or corrupt the database")
        elif sync == "NORMAL" and mode == "WAL":
            out.append("synchronous=NORMAL with WAL: a power cut can lose the last acknowledged commits")
        elif sync == "NORMAL":
            out.append("synchronous=NORMAL: a power cut at the wrong moment can corrupt a rollback-journal database")
        if mode in ("OFF", "MEMORY"):
            out.append(f"journal_mode={mode}: a crash in the middle of a transaction can corrupt the database")
    return out


# --- what a crash test's model in force cannot exercise (crash-fidelity work) ---
PAGE_BYTES = {"postgresql": 8192, "mariadb": 16384}  # the pages a torn write would tear (defaults)
_TORN_PAGE_SETTINGS = {("postgresql", "full_page_writes"): ("off",),
                       ("mariadb", "innodb_doublewrite"): ("0", "off")}


def crash_model_gaps(spec: WorkloadSpec, unit: int | None, torn_states: int | None) -> list[str]:
    return model_gaps(spec, database_of(spec), unit, torn_states)


def model_gaps(spec: WorkloadSpec, backend: str | None, unit: int | None, torn_states: int | None) -> list[str]:
    """Per setting of `spec` whose risk the crash model in force could not exercise, why (pure).

    `unit`: the model's atomic unit in bytes (None: a stored run from before units, whose states kept or
    lost whole recorded requests); `torn_states`: how many states tore a write (None: not known).
    """
    out = []
    for (db, key), bad in _TORN_PAGE_SETTINGS.items():
        if backend != db or str(spec.get(key, "")).lower() not in bad:
            continue
        page = PAGE_BYTES[db]
        risk = f"{key}={spec.get(key)}: its risk is a torn {page // 1024} KiB page"
        if unit is None:
            out.append(f"{risk}, and this model keeps or loses whole write requests: it cannot tear a page, "
                       "so no verdict on this setting")
        elif unit >= page:
            out.append(f"{risk}, and this model's unit is {unit // 1024} KiB: it cannot tear a page, "
                       "so no verdict on this setting")
        elif torn_states == 0:
            out.append(f"{risk}, and no state of this run tore a write: not exercised, so no verdict on this setting")
    if backend == "mariadb" and str(spec.get("sync_binlog", "")) == "0" and \
            str(spec.get("log_bin", "")).lower() not in ("", "none", "0", "off"):
        out.append("sync_binlog=0: its risk is a binary log behind the tables, and the crash check reads only the "
                   "tables: no verdict on this setting")
    return out
