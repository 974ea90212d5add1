"""Why a cell measured what it did: plain lines from the monitors (pure)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Any

from pickfs.fsfacts import JOURNAL_GROUPS, journal_named, journal_thread_group
from pickfs.model import CHILDREN, Trial


def process_group(comm: str) -> str:
    """Names that survive across runs: jbd2/loop3-8 -> jbd2 (ext4 journal), kworker/u8:9-loop0 -> kworker (loop)."""
    journal = journal_thread_group(comm)
    if journal:
        return journal
    if comm.startswith("kworker/"):
        m = re.search(r"[-+]([A-Za-z_]+)", comm)  # '+' while the work item runs
        return f"kworker ({m.group(1)})" if m else "kworker"
    if comm.startswith("btrfs-"):
        return re.sub(r"-\d+$", "", comm)
    return re.sub(r"[/:]\d+.*$", "", comm)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _totals(trials: Sequence[Trial], key: str) -> list[float]:
    return [float(t.monitor["totals"][key]) for t in trials if key in t.monitor.get("totals", {})]


def _metric(trials: Sequence[Trial], key: str) -> list[float]:
    return [float(t.metrics[key]) for t in trials if key in t.metrics]


def _mib(n: float) -> str:
    return f"{n / 1024**2:,.1f} MiB"


# The loop device's own workers write the device's I/O into the image file: the layer below
# the device under test, so they are not writers on the filesystem being compared.
BELOW_DEVICE = frozenset({"kworker (loop)"})
CLIENT_BOUND = 0.75  # CPUs the client used before the explanation says it may be the bottleneck


QUIET_BYTES = 1024**2  # other processes on the machine writing less than this in a run: quiet enough
QUIET_WAIT = 0.02


def write_shares(trials: Sequence[Trial]) -> list[tuple[str, float]]:
    """Share of the bytes written, per process group (the workload's client included), mean over runs.

    The cell's own processes only (runs recorded before the monitors told them apart list every
    process). The journal's writes come from the filesystem's counters (`journal_write_bytes`):
    the journal thread's own /proc/<pid>/io does not count them."""
    shares: dict[str, float] = {}
    for t in trials:
        written: dict[str, float] = {}
        totals = t.monitor.get("totals", {})
        journal = totals.get("journal_write_bytes")
        for p in t.monitor.get("processes", []):
            if p["comm"] == CHILDREN:
                # The processes the run started and reaped: the client's own count, when it gave one, is the same I/O
                g = "workload client"
                if "client_write_bytes" in t.metrics:
                    continue
            else:
                g = process_group(p["comm"])
            if g in BELOW_DEVICE or (journal is not None and g in JOURNAL_GROUPS):
                continue
            written[g] = written.get(g, 0.0) + p["write_bytes"]
        if "client_write_bytes" in t.metrics:
            written["workload client"] = t.metrics["client_write_bytes"]
        if journal:
            name = str(totals.get("journal", "journal"))
            written[name] = written.get(name, 0.0) + float(journal)
        total = sum(written.values())
        for g, b in written.items():
            if total:
                shares[g] = shares.get(g, 0.0) + b / total / len(trials)
    return sorted(shares.items(), key=lambda x: -x[1])


def wait_shares(trials: Sequence[Trial], key: str = "io_waiting") -> list[tuple[str, float]]:
    """Share of samples in which a task of each group waited on I/O (state D), mean over runs.
    key "io_waiting_other": the same for the rest of the machine."""
    shares: dict[str, float] = {}
    for t in trials:
        per_run: dict[str, float] = {}
        for w in t.monitor.get(key, []):
            g = "workload client" if w["comm"].startswith("pickfs-") else process_group(w["comm"])
            per_run[g] = max(per_run.get(g, 0.0), w["share"])
        for g, share in per_run.items():
            shares[g] = shares.get(g, 0.0) + share / len(trials)
    return sorted(shares.items(), key=lambda x: -x[1])


def other_writers(trials: Sequence[Trial]) -> list[tuple[str, float]]:
    """Bytes written by processes that are not the cell's, per group, mean over runs."""
    out: dict[str, float] = {}
    for t in trials:
        for p in t.monitor.get("other_processes", []):
            g = process_group(p["comm"])
            out[g] = out.get(g, 0.0) + p["write_bytes"] / len(trials)
    return sorted(((g, b) for g, b in out.items() if b > 0), key=lambda x: -x[1])


# What a configuration's device is to the reader, by the kind of target it stood on: a loop device's number means
# nothing after the run, a spare device's name does.
DEVICE_ROLES = {"image": "its image's loop device", "directory": "the disk under its directory ({disk})",
                "device": "{disk}"}


def flush_line(trials: Sequence[Trial], target: str = "device") -> str | None:
    """The device's writes and flushes, in all and per unit of the workload's work (a transaction,
    a sync call, an I/O, else a second); the device named by its role on the `target` kind."""
    wrote = _median(_totals(trials, "disk_write_bytes"))
    if wrote is None:
        return None
    elapsed = _median(_totals(trials, "elapsed_s")) or 0.0
    writes = _median(_totals(trials, "disk_writes")) or 0
    flushes = _median(_totals(trials, "disk_flushes")) or 0
    busy = _median(_totals(trials, "disk_busy_s")) or 0
    disk = DEVICE_ROLES.get(target, "{disk}").format(disk=trials[0].monitor["totals"].get("disk", "the device"))
    text = f"{disk} wrote {_mib(wrote)} in {writes:,.0f} writes and {flushes:,.0f} flushes"
    tx = _median(_metric(trials, "transactions"))
    syncs = _median(_metric(trials, "syncs_per_s"))
    iops = _median(_metric(trials, "iops"))
    if tx:
        text += f": {flushes / tx:.2f} flushes and {wrote / tx / 1024:.1f} KiB per transaction"
    elif syncs and elapsed:
        text += f": {flushes / (syncs * elapsed):.2f} flushes per sync call"
    elif iops and elapsed:
        text += f": {flushes / (iops * elapsed):.3f} flushes per I/O"
    elif elapsed:
        text += f": {flushes / elapsed:,.1f} flushes per second"
    if elapsed:
        text += f"; busy {busy / elapsed:.0%} of the time"
    return text


def journal_line(trials: Sequence[Trial]) -> str | None:
    """The journal's share of the device's writes, from the filesystem's own counters."""
    journal = _median(_totals(trials, "journal_write_bytes"))
    wrote = _median(_totals(trials, "disk_write_bytes"))
    if journal is None or not wrote:
        return None
    name = str(trials[0].monitor["totals"].get("journal", "journal"))
    known = journal_named(name)
    source = known.source if known else "the filesystem's counters"
    return (f"{name} wrote {_mib(journal)}, {min(journal / wrote, 1):.0%} of what reached the device "
            f"(from {source}: a journal thread's writes are in no process's I/O counters)")


def other_activity_line(trials: Sequence[Trial]) -> str | None:
    """Everything on the machine that was not this cell's, when it did anything: a warning that the
    machine was not quiet."""
    writers = other_writers(trials)
    total = sum(b for _, b in writers)
    waits = [(g, w) for g, w in wait_shares(trials, "io_waiting_other") if w >= QUIET_WAIT]
    if total < QUIET_BYTES and not waits:
        return None
    parts = []
    if total >= QUIET_BYTES:
        shown = [(g, b) for g, b in writers[:3] if b >= 0.05 * 1024**2]  # nothing that rounds to 0.0 MiB
        parts.append(f"wrote {_mib(total)} (" + ", ".join(f"{g} {_mib(b)}" for g, b in shown) + ")")
    if waits:
        parts.append("waited on I/O: " + ", ".join(f"{g} {w:.0%}" for g, w in waits[:3]))
    return "other activity on this machine, not this cell's (the machine was not quiet): " + "; ".join(parts)


def explain(trials: Sequence[Trial], target: str = "device") -> list[str]:
    """A few plain lines about the measured runs of one cell (medians across runs); its device named by its role
    on the `target` kind (image, device, directory)."""
    trials = [t for t in trials if t.monitor]
    if not trials:
        return []
    lines: list[str] = []
    wrote = _median(_totals(trials, "disk_write_bytes"))
    flushes = flush_line(trials, target)
    if flushes is not None and wrote is not None:
        lines.append(flushes)
        journal = journal_line(trials)
        if journal:
            lines.append(journal)
        space = _median(_totals(trials, "space_used_bytes"))
        if space is not None:
            lines.append(f"space used after the run: {_mib(space)}")
        logical = _median(_metric(trials, "client_wchar"))
        if logical:
            lines.append(f"write amplification {wrote / logical:.1f}x: {_mib(wrote)} reached the device "
                         f"for {_mib(logical)} the database wrote")
    iowait = _median(_totals(trials, "cpu_iowait_share"))
    if iowait is not None:
        user = _median(_totals(trials, "cpu_user_share")) or 0
        system = _median(_totals(trials, "cpu_system_share")) or 0
        text = f"CPU waited on disk {iowait:.0%} of the time (user {user:.0%}, system {system:.0%})"
        psi = _median(_totals(trials, "psi_some_share"))
        if psi is not None:
            text += f"; some task was stalled on I/O {min(psi, 1):.0%} of the time"
        lines.append(text)
    cpu = _median(_metric(trials, "client_cpu_share"))
    if cpu is not None and cpu >= CLIENT_BOUND:
        lines.append(f"the workload's client used {cpu:.2f} CPUs: it, not the storage, may be setting the pace")
    shares = [(g, s) for g, s in write_shares(trials) if s >= 0.01]
    if shares:
        lines.append("wrote the most: " + ", ".join(f"{g} {s:.0%}" for g, s in shares[:3]))
    waits = [(g, w) for g, w in wait_shares(trials) if w >= 0.02]
    if waits:
        lines.append("waiting on I/O (share of the time, sampled at 10 Hz): "
                     + ", ".join(f"{g} {w:.0%}" for g, w in waits[:3]))
    other = other_activity_line(trials)
    if other:
        lines.append(other)
    return lines


def monitor_summary(trials: Sequence[Trial]) -> dict[str, Any]:
    """Medians of the monitors' totals across a cell's measured runs (for exports)."""
    keys = sorted({k for t in trials for k, v in t.monitor.get("totals", {}).items() if isinstance(v, (int, float))})
    return {k: _median(_totals(trials, k)) for k in keys}
