"""Which settings trade safety for speed, and what each risks, in one line (pure)."""

from __future__ import annotations

from pickfs import databases
from pickfs.fsfacts import facts_of, in_memory
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
    if in_memory(config.fstype):
        out.append("tmpfs: in memory; everything is lost on a power cut or reboot")
    if facts_of(config.fstype).without_journal(config.mkfs_options):
        out.append("no journal: after a power cut the filesystem needs a full fsck and recent metadata can be lost")
    for opt in config.mount_options:
        risk = _MOUNT_RISKS.get(opt)
        if risk:
            out.append(risk)
    return out


def database_of(spec: WorkloadSpec) -> str | None:
    """The database a workload drives with these settings (what the registry knows; recorded with each run)."""
    from pickfs.workloads import REGISTRY  # deferred: numpy/scipy via the workloads; a stored run renders without them

    cls = REGISTRY.get(spec.name)
    return cls.database_for(spec) if cls else None


def workload_risks(spec: WorkloadSpec) -> list[str]:
    return risks_of(spec, database_of(spec))


def risks_of(spec: WorkloadSpec, backend: str | None) -> list[str]:
    """What the settings of a workload on this database risk (pure)."""
    db = databases.known(backend)
    return db.risks(spec) if db else []


# --- what a crash test's model in force cannot exercise (crash-fidelity work) ---
def crash_model_gaps(spec: WorkloadSpec, unit: int | None, torn_states: int | None) -> list[str]:
    return model_gaps(spec, database_of(spec), unit, torn_states)


def model_gaps(spec: WorkloadSpec, backend: str | None, unit: int | None, torn_states: int | None) -> list[str]:
    """Per setting of `spec` whose risk the crash model in force could not exercise, why (pure).

    `unit`: the model's atomic unit in bytes (None: a stored run from before units, whose states kept or
    lost whole recorded requests); `torn_states`: how many states tore a write (None: not known).
    """
    db = databases.known(backend)
    if db is None:
        return []
    out = []
    for setting in db.torn_page_settings:
        value = spec.get(setting.key, "")
        if db.page_bytes is None or str(value).lower() not in setting.unsafe:
            continue
        gap = _torn_page_gap(f"{setting.key}={value}: its risk is a torn {db.page_bytes // 1024} KiB page",
                             db.page_bytes, unit, torn_states)
        if gap:
            out.append(gap)
    return out + db.crash_check_blind_spots(spec)


def _torn_page_gap(risk: str, page: int, unit: int | None, torn_states: int | None) -> str | None:
    if unit is None:
        return (f"{risk}, and this model keeps or loses whole write requests: it cannot tear a page, "
                "so no verdict on this setting")
    if unit >= page:
        return f"{risk}, and this model's unit is {unit // 1024} KiB: it cannot tear a page, so no verdict on this setting"
    if torn_states == 0:
        return f"{risk}, and no state of this run tore a write: not exercised, so no verdict on this setting"
    return None
