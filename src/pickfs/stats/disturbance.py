"""Was the machine busy while a run measured, and how much? (pure)

Each measured slice records (monitors.sampler.RunMonitor) the CPU time that processes other than
pickfs's took, the CPUs online, the share of the CPU time the hypervisor stole, and the CPU and
I/O pressure. A slice is busy when other processes took at least a quarter of the CPUs, or the
hypervisor stole at least a tenth of the CPU time; a run is disturbed when its busy slices make at
least 5% of its measured time. Why these thresholds: see the method page ("A busy machine").
Slices that did not record it (runs stored before, or with the monitors off) count for nothing:
a run none of whose slices recorded it has no disturbance to tell (None), not a quiet one.

A disturbed run does not decide on slices whose removal would change its answer: the analysis
(analysis/run.py) decides again on its quiet slices (all but each `busy_slice`) and, where they suffice, answers
and figures from them (`Disturbance.on_quiet`), saying first where the answer differs (`Disturbance.changes`). A plan that accepts a busy
machine as the condition to measure (`accept_busy`) decides on every slice, and its report says
which condition the answer is for (`Disturbance.accepted`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pickfs.model import Trial

OTHERS_SHARE = 0.25  # of the CPUs, taken by other processes: a busy slice
STEAL_SHARE = 0.10  # of the CPU time, stolen by the hypervisor: a busy slice
DISTURBED_SHARE = 0.05  # of the run's measured time in busy slices: a disturbed run


@dataclass(frozen=True)
class SliceLoad:
    """What else the machine did during one measured slice."""

    elapsed_s: float
    cpus: int
    other_cores: float  # the CPU others took, in cores (CPU-seconds per second)
    steal_share: float  # of the CPU time
    cpu_pressure: float | None  # share of the time some task waited for a CPU (None: the kernel has no PSI)
    io_pressure: float | None  # share of the time some task waited for I/O
    others: tuple[tuple[str, float], ...]  # (name, CPU-seconds) of the other processes that took most

    @property
    def busy_by_others(self) -> bool:
        return self.other_cores >= OTHERS_SHARE * self.cpus

    @property
    def busy_by_steal(self) -> bool:
        return self.steal_share >= STEAL_SHARE

    @property
    def busy(self) -> bool:
        return self.busy_by_others or self.busy_by_steal


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def slice_load(trial: Trial) -> SliceLoad | None:
    """The slice's load, or None when the slice did not record it."""
    totals = trial.monitor.get("totals", {}) if isinstance(trial.monitor, dict) else {}
    other = _number(totals.get("other_cpu_s")) if isinstance(totals, dict) else None
    elapsed = _number(totals.get("elapsed_s")) if other is not None else None
    if other is None or not elapsed or elapsed <= 0:
        return None
    cpus = _number(totals.get("cpus")) or 1.0
    others: list[tuple[str, float]] = []
    for entry in trial.monitor.get("other_cpu", []) or []:
        if isinstance(entry, dict) and isinstance(entry.get("comm"), str):
            seconds = _number(entry.get("cpu_s"))
            if seconds is not None:
                others.append((entry["comm"], seconds))
    return SliceLoad(elapsed_s=elapsed, cpus=max(1, int(cpus)), other_cores=max(0.0, other) / elapsed,
                     steal_share=_number(totals.get("cpu_steal_share")) or 0.0,
                     cpu_pressure=_number(totals.get("psi_cpu_some_share")),
                     io_pressure=_number(totals.get("psi_some_share")), others=tuple(others))


@dataclass(frozen=True)
class Disturbance:
    """How busy the machine was over a run's measured slices."""

    slices: int  # measured slices that recorded the load
    busy_slices: int
    seconds: float  # their measured time
    busy_seconds: float
    cpus: int
    other_cores: float  # the cores others took over the busy slices (time-weighted; over all if none busy)
    steal_share: float  # of the CPU time, over the busy slices (likewise)
    cpu_pressure: float | None  # likewise; None where the kernel has no PSI
    io_pressure: float | None
    by_others: int  # busy slices in which other processes took the CPUs
    by_steal: int  # busy slices in which the hypervisor stole it
    others: tuple[str, ...]  # the names of the other processes that took most CPU in the busy slices
    accepted: bool = False  # the plan accepts a busy machine as the condition to measure: every slice counts
    rechecked: bool = False  # decided again on the quiet slices alone (a disturbed run that did not accept it)
    changes: tuple[str, ...] = ()  # workloads whose answer the busy slices changed: answered from the quiet ones
    on_quiet: tuple[str, ...] = ()  # every workload answered and figured from its quiet slices (changes among them)
    unchecked: tuple[str, ...] = ()  # workloads with too few quiet slices to answer from: the busy machine's answer

    @property
    def busy_share(self) -> float:
        """Share of the run's measured time spent in busy slices."""
        return self.busy_seconds / self.seconds if self.seconds else 0.0

    @property
    def disturbed(self) -> bool:
        return self.busy_slices > 0 and self.busy_share >= DISTURBED_SHARE


def _weighted(loads: list[SliceLoad], value: Iterable[float | None]) -> float | None:
    pairs = [(s.elapsed_s, v) for s, v in zip(loads, value, strict=True) if v is not None]
    total = sum(w for w, _ in pairs)
    return sum(w * v for w, v in pairs) / total if total else None


def disturbance(trials: Iterable[Trial]) -> Disturbance | None:
    """The run's disturbance from its trials; None when no slice recorded it (say nothing)."""
    loads = [load for t in trials if t.ok and t.phase != "warmup" and (load := slice_load(t)) is not None]
    if not loads:
        return None
    busy = [s for s in loads if s.busy]
    over = busy or loads
    names: dict[str, float] = {}
    for s in busy:
        for comm, seconds in s.others:
            names[comm] = names.get(comm, 0.0) + seconds
    return Disturbance(
        slices=len(loads), busy_slices=len(busy), seconds=sum(s.elapsed_s for s in loads),
        busy_seconds=sum(s.elapsed_s for s in busy), cpus=max(s.cpus for s in loads),
        other_cores=_weighted(over, (s.other_cores for s in over)) or 0.0,
        steal_share=_weighted(over, (s.steal_share for s in over)) or 0.0,
        cpu_pressure=_weighted(over, (s.cpu_pressure for s in over)),
        io_pressure=_weighted(over, (s.io_pressure for s in over)),
        by_others=sum(1 for s in busy if s.busy_by_others), by_steal=sum(1 for s in busy if s.busy_by_steal),
        others=tuple(n for n, _ in sorted(names.items(), key=lambda item: -item[1])[:3]))


def busy_slice(trial: Trial) -> bool:
    """Did the slice record the machine's load and find it busy?"""
    load = slice_load(trial)
    return load is not None and load.busy
