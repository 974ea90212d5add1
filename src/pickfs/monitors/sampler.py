"""Sample the machine during a run: a thread at a fixed interval, plus start/end snapshots."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from pickfs.model import CHILDREN
from pickfs.monitors.attribution import (
    CpuSides,
    Scope,
    belongs,
    is_kernel_thread,
    own_processes,
    pickfs_processes,
    serves_pickfs,
    split_cpu,
)
from pickfs.monitors.procfs import (
    CpuTimes,
    DiskCounters,
    TaskStat,
    parse_cpu,
    parse_disk,
    parse_pid_io,
    parse_psi,
    parse_task_stat,
)
from pickfs.stack.filesystems import fs_type

TOP_PROCESSES = 8
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def read_disk(name: str | None) -> DiskCounters | None:
    return parse_disk(_read("/proc/diskstats"), name) if name else None


def read_cpu() -> CpuTimes:
    return parse_cpu(_read("/proc/stat"))


def read_psi(resource: str = "io") -> tuple[int, int] | None:
    """/proc/pressure/io or /proc/pressure/cpu as (some, full) microseconds; None where the kernel has none."""
    text = _read(f"/proc/pressure/{resource}")
    return parse_psi(text) if text else None


def read_tasks() -> dict[int, TaskStat]:
    """pid -> its name, state, parent and CPU time, for every process and kernel thread (one pass over /proc)."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            out[int(entry.name)] = parse_task_stat(Path(entry.path, "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue
    return out


def read_processes(exclude: set[int], tasks: dict[int, TaskStat] | None = None) -> dict[int, tuple[str, int, int, int]]:
    """pid -> (comm, read_bytes, write_bytes, parent pid), kernel threads included (of `tasks`, or a new scan)."""
    out = {}
    for pid, task in (read_tasks() if tasks is None else tasks).items():
        comm, ppid = task.comm, task.ppid
        if pid in exclude:
            continue
        try:
            io = parse_pid_io(Path(f"/proc/{pid}/io").read_text())
        except (OSError, ValueError):
            continue
        out[pid] = (comm, io.get("read_bytes", 0), io.get("write_bytes", 0), ppid)
    return out


def _own_io() -> tuple[int, int]:
    """pickfs's read_bytes and write_bytes, which include those of every child it has reaped."""
    try:
        io = parse_pid_io(Path("/proc/self/io").read_text())
    except (OSError, ValueError):
        return 0, 0
    return io.get("read_bytes", 0), io.get("write_bytes", 0)


def tasks_waiting_on_io(scope: Scope, tasks: dict[int, TaskStat] | None = None) -> tuple[list[str], list[str]]:
    """Names of the tasks in uninterruptible sleep (state D: waiting on I/O) right now (or in a scan
    made just now): the cell's own, and the others on this machine."""
    tasks = read_tasks() if tasks is None else tasks
    own = own_processes({pid: t.ppid for pid, t in tasks.items()}, scope)
    mine: list[str] = []
    others: list[str] = []
    for pid, t in tasks.items():
        if t.state == "D":
            (mine if belongs(pid, t.ppid, t.comm, own, scope) else others).append(t.comm)
    return mine, others


def device_number(disk: str | None) -> str | None:
    """MAJOR:MINOR of a block device by name, from sysfs."""
    if not disk:
        return None
    try:
        return Path(f"/sys/class/block/{disk}/dev").read_text().strip() or None
    except OSError:
        return None


def read_journal(disk: str | None, fstype: str | None, mountpoint: str | None) -> tuple[str, int] | None:
    """(what, bytes written so far) of the filesystem's journal, from the kernel's own counters: the
    journal thread's writes are not in its /proc/<pid>/io, so the device's figures are the only source."""
    journal = fs_type(fstype).journal if fstype else None
    if not disk or journal is None:
        return None
    try:
        block = os.statvfs(mountpoint).f_bsize if mountpoint else 4096
    except OSError:
        block = 4096
    text = _read(journal.counters.format(disk=disk))
    written = journal.parse(text, block) if text else None
    return (journal.name, written) if written is not None else None


def _pid_in(pidfile: str) -> int | None:
    try:
        return int(Path(pidfile).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cell_scope(disk: str | None, fstype: str | None, pidfile: str = "",
               foreign_pidfiles: tuple[str, ...] = (),
               beside: tuple[tuple[str | None, str | None], ...] = ()) -> Scope:
    """The scope of one cell: its device and filesystem, its server (by pid file), the servers of the
    cells standing beside it, and their (device, filesystem type)."""
    own = _pid_in(pidfile) if pidfile else None
    foreign = tuple(p for p in (_pid_in(f) for f in foreign_pidfiles if f and f != pidfile) if p and p != own)
    return Scope(disk=disk, major_minor=device_number(disk), fstype=fstype, roots=(own,) if own else (),
                 foreign=foreign, beside=tuple(Scope(disk=d, major_minor=device_number(d), fstype=f)
                                               for d, f in beside if (d, f) != (disk, fstype)))


class RunMonitor:
    """Use as a context manager around one run; `result()` is JSON-able.

    Per-process figures compare the processes alive at the start and at the end. Processes the
    run started and ended (the workload's client, cp, tar, fio) are in neither; but a parent's
    /proc/<pid>/io takes in the I/O of every child it reaps, so pickfs's own growth over the run
    is theirs, and is listed under CHILDREN.

    Only the cell's own processes and kernel threads (see monitors.attribution) are listed as its
    writers and waiters; every other process on the machine that did I/O is kept apart, as other
    activity. The journal's writes come from the filesystem's own counters.

    Is the machine busy? The CPU time of every task is taken from the same scans of /proc (no scan of
    its own) and split into pickfs's, the others' and the kernel's (monitors.attribution.split_cpu);
    with the CPU pressure and the steal time, the disturbance of each slice (stats.disturbance).
    """

    def __init__(self, disk: str | None, interval_s: float = 1.0, state_interval_s: float = 0.1,
                 scope: Scope | None = None, mountpoint: str | None = None) -> None:
        self.disk = disk
        base = scope or Scope()
        self.scope = Scope(disk=base.disk or disk, major_minor=base.major_minor or device_number(disk),
                           fstype=base.fstype, roots=tuple(dict.fromkeys((os.getpid(), *base.roots))),
                           foreign=base.foreign, beside=base.beside)
        self.mountpoint = mountpoint
        self.waiting_other: dict[str, int] = {}
        self.interval_s = interval_s
        self.state_interval_s = state_interval_s
        self.state_samples = 0
        self.waiting: dict[str, int] = {}  # task name -> samples in which it waited on I/O
        self.series: dict[str, list[float]] = {"t": [], "disk_util": [], "disk_write_Bps": [], "iowait": [],
                                                "cpu_busy": []}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cost_s = 0.0
        self._ticks: dict[int, int] | None = None  # pid -> CPU ticks at the last scan (None: none yet)
        self._kernel_ours: dict[str, bool] = {}  # a kernel thread's name -> does it serve pickfs's devices
        self.cpu_sides = CpuSides()
        self.other_cpu: dict[str, int] = {}  # other processes' CPU ticks by name

    def account_cpu(self, tasks: dict[int, TaskStat]) -> None:
        """Add the CPU each task took since the last scan to its side (pickfs's, others', the kernel's);
        the first scan is where counting starts."""
        if self._ticks is None:
            self._ticks = {pid: t.cpu_ticks for pid, t in tasks.items()}
            return
        ppids = {pid: t.ppid for pid, t in tasks.items()}
        for pid, t in tasks.items():
            if t.comm not in self._kernel_ours and is_kernel_thread(pid, t.ppid):
                self._kernel_ours[t.comm] = serves_pickfs(t.comm, self.scope)
        sides, by_name = split_cpu(self._ticks, {pid: (t.comm, t.cpu_ticks, t.ppid) for pid, t in tasks.items()},
                                   pickfs_processes(ppids, self.scope), self._kernel_ours)
        c = self.cpu_sides
        self.cpu_sides = CpuSides(c.pickfs + sides.pickfs, c.others + sides.others, c.kernel + sides.kernel)
        for comm, ticks in by_name.items():
            self.other_cpu[comm] = self.other_cpu.get(comm, 0) + ticks
        self._ticks = {pid: t.cpu_ticks for pid, t in tasks.items()}

    def __enter__(self) -> RunMonitor:
        self._exclude = {os.getpid()}
        self.t0 = time.monotonic()
        self.disk0, self.cpu0, self.psi0 = read_disk(self.disk), read_cpu(), read_psi()
        self.psi_cpu0 = read_psi("cpu")
        tasks = read_tasks()
        self.account_cpu(tasks)
        self.procs0 = read_processes(self._exclude, tasks)
        self.own0 = _own_io()
        self.journal0 = read_journal(self.disk, self.scope.fstype, self.mountpoint)
        self._thread = threading.Thread(target=self._loop, name="pickfs-monitor", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.elapsed = time.monotonic() - self.t0
        self.disk1, self.cpu1, self.psi1 = read_disk(self.disk), read_cpu(), read_psi()
        self.psi_cpu1 = read_psi("cpu")
        tasks = read_tasks()
        self.account_cpu(tasks)
        self.procs1 = read_processes(self._exclude, tasks)
        self.own1 = _own_io()
        self.journal1 = read_journal(self.disk, self.scope.fstype, self.mountpoint)

    def _loop(self) -> None:
        last_t, last_disk, last_cpu = time.monotonic(), read_disk(self.disk), read_cpu()
        next_series = last_t + self.interval_s
        while not self._stop.wait(self.state_interval_s):
            c0 = time.thread_time()
            self.state_samples += 1
            tasks = read_tasks()
            mine, others = tasks_waiting_on_io(self.scope, tasks)
            self.account_cpu(tasks)
            for comm in set(mine):  # a name counts once per sample
                self.waiting[comm] = self.waiting.get(comm, 0) + 1
            for comm in set(others):
                self.waiting_other[comm] = self.waiting_other.get(comm, 0) + 1
            now = time.monotonic()
            if now < next_series:
                self._cost_s += time.thread_time() - c0
                continue
            next_series += self.interval_s
            disk, cpu = read_disk(self.disk), read_cpu()
            dt = now - last_t
            self.series["t"].append(round(now - self.t0, 3))
            if disk and last_disk:
                self.series["disk_util"].append(min(1.0, (disk.io_ticks_ms - last_disk.io_ticks_ms) / 1000 / dt))
                self.series["disk_write_Bps"].append((disk.bytes_written - last_disk.bytes_written) / dt)
            total = cpu.total - last_cpu.total
            self.series["iowait"].append((cpu.iowait - last_cpu.iowait) / total if total else 0.0)
            busy = total - (cpu.idle - last_cpu.idle) - (cpu.iowait - last_cpu.iowait)
            self.series["cpu_busy"].append(busy / total if total else 0.0)
            last_t, last_disk, last_cpu = now, disk, cpu
            self._cost_s += time.thread_time() - c0

    def result(self) -> dict[str, Any]:
        cpu_total = self.cpu1.total - self.cpu0.total
        totals: dict[str, Any] = {"elapsed_s": self.elapsed, "sampler_cpu_s": self._cost_s}
        if cpu_total:
            for field in ("user", "system", "iowait", "idle", "steal"):
                totals[f"cpu_{field}_share"] = (getattr(self.cpu1, field) - getattr(self.cpu0, field)) / cpu_total
        if self.psi0 and self.psi1 and self.elapsed:
            totals["psi_some_share"] = (self.psi1[0] - self.psi0[0]) / 1e6 / self.elapsed
            totals["psi_full_share"] = (self.psi1[1] - self.psi0[1]) / 1e6 / self.elapsed
        if self.psi_cpu0 and self.psi_cpu1 and self.elapsed:
            totals["psi_cpu_some_share"] = (self.psi_cpu1[0] - self.psi_cpu0[0]) / 1e6 / self.elapsed
        # is the machine busy: the CPU time others took (in CPU-seconds; over elapsed_s, the cores they took)
        totals["cpus"] = self.cpu1.cpus
        totals["other_cpu_s"] = self.cpu_sides.others / CLOCK_TICKS
        totals["pickfs_cpu_s"] = self.cpu_sides.pickfs / CLOCK_TICKS
        totals["kernel_cpu_s"] = self.cpu_sides.kernel / CLOCK_TICKS
        if self.disk0 and self.disk1:
            d0, d1 = self.disk0, self.disk1
            totals.update({
                "disk": self.disk,
                "disk_reads": d1.reads - d0.reads,
                "disk_writes": d1.writes - d0.writes,
                "disk_read_bytes": d1.bytes_read - d0.bytes_read,
                "disk_write_bytes": d1.bytes_written - d0.bytes_written,
                "disk_flushes": d1.flushes - d0.flushes,
                "disk_discards": d1.discards - d0.discards,
                "disk_busy_s": (d1.io_ticks_ms - d0.io_ticks_ms) / 1000,
                "disk_queue_s": (d1.queue_ms - d0.queue_ms) / 1000,
            })
        if self.journal0 and self.journal1 and self.journal0[0] == self.journal1[0]:
            totals["journal"] = self.journal1[0]
            totals["journal_write_bytes"] = max(0, self.journal1[1] - self.journal0[1])
        ppids = {pid: p[3] for pid, p in self.procs1.items()}
        ppids.update({pid: p[3] for pid, p in self.procs0.items() if pid not in ppids})
        ppids[os.getpid()] = os.getppid()
        own = own_processes(ppids, self.scope)
        procs: list[dict[str, Any]] = []
        other: list[dict[str, Any]] = []
        for pid, (comm, rb, wb, ppid) in self.procs1.items():
            before = self.procs0.get(pid)
            if before is None or before[0] != comm:
                continue
            if rb - before[1] or wb - before[2]:
                entry = {"pid": pid, "comm": comm, "read_bytes": rb - before[1], "write_bytes": wb - before[2]}
                (procs if belongs(pid, ppid, comm, own, self.scope) else other).append(entry)
        reaped = (self.own1[0] - self.own0[0], self.own1[1] - self.own0[1])
        if any(reaped):
            procs.append({"pid": os.getpid(), "comm": CHILDREN, "read_bytes": reaped[0], "write_bytes": reaped[1]})
        procs.sort(key=lambda p: p["write_bytes"], reverse=True)
        other.sort(key=lambda p: p["write_bytes"], reverse=True)
        totals["other_write_bytes"] = sum(p["write_bytes"] for p in other)
        totals["other_read_bytes"] = sum(p["read_bytes"] for p in other)

        def shares(counts: dict[str, int]) -> list[dict[str, Any]]:
            if not self.state_samples:
                return []
            ranked = sorted(counts.items(), key=lambda item: -item[1])[:TOP_PROCESSES]
            return [{"comm": c, "share": n / self.state_samples} for c, n in ranked]

        return {"interval_s": self.interval_s, "totals": totals, "processes": procs[:TOP_PROCESSES],
                "io_waiting": shares(self.waiting), "state_samples": self.state_samples, "series": self.series,
                "other_processes": other[:TOP_PROCESSES], "io_waiting_other": shares(self.waiting_other),
                "other_cpu": [{"comm": c, "cpu_s": n / CLOCK_TICKS} for c, n in
                              sorted(self.other_cpu.items(), key=lambda item: -item[1])[:TOP_PROCESSES]],
                "scope": {"disk": self.scope.disk, "fstype": self.scope.fstype, "roots": list(self.scope.roots),
                          "foreign": list(self.scope.foreign)}}
