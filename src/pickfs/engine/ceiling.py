"""The client's own limits at a fixed rate, measured in memory (tmpfs) where no disk can slow it.

Before a fixed-rate comparison of an embedded database (SQLite, Firebird embedded), the workload's own client runs
on a private directory in /dev/shm: once flat out (the most it can do on this machine's CPUs:
no configuration on a disk can be offered more and keep up), and once at the rate asked for
(capped at half that most), where each transaction the client waited for (none queued before it)
began this long after its scheduled start: the client's own scheduling error. A rate above the most is flagged: the figures would measure the
client, not the storage. A database server would need a server started in memory: for those,
add the tmpfs preset to the comparison and read its row.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from pickfs.errors import PickfsError
from pickfs.model import WorkloadSpec
from pickfs.stack.cleanup import holding
from pickfs.stack.ledger import Ledger
from pickfs.stack.mountinfo import mount_containing, parse_mountinfo
from pickfs.stats.latency import fixed_rate_block, hist_of, percentile_us
from pickfs.workloads import workload_class
from pickfs.workloads.base import Workload

SHM = Path("/dev/shm")
CEILING_SECONDS = 2.0
TOO_CLOSE = 0.9  # a rate above this share of the most the client does in memory is flagged


@dataclass(frozen=True)
class Ceiling:
    max_rate: float  # transactions per second, flat out, in memory
    probe_rate: float  # the fixed rate the scheduling error was measured at
    lag_p50_s: float
    lag_p99_s: float
    cpu_share: float  # of the flat-out run: near 1, the client's one CPU was the limit

    def words(self) -> str:
        cpu = "" if math.isnan(self.cpu_share) else f" ({self.cpu_share:.2f} CPU)"
        error = (f"p50 {self.lag_p50_s * 1e6:.0f} us, p99 {self.lag_p99_s * 1e6:.0f} us"
                 if not math.isnan(self.lag_p99_s) else "not measured (the tool logs no start times of its own)")
        return (f"the client on tmpfs: at most {self.max_rate:,.0f} tx/s flat out{cpu}; "
                f"scheduling error at {self.probe_rate:,.0f}/s: {error}")


def in_memory_possible(spec: WorkloadSpec) -> str | None:
    """Why the client's ceiling cannot be measured in memory for this workload; None when it can."""
    cls = workload_class(spec.name)
    if cls.service_for(spec) is not None:
        return f"{spec.name} needs a database server: add the tmpfs preset to the comparison to see its ceiling"
    if _fstype(SHM) != "tmpfs":
        return f"{SHM} is not tmpfs here: the client's ceiling is not measured"
    return None


def _fstype(path: Path) -> str:
    try:
        entry = mount_containing(parse_mountinfo(Path("/proc/self/mountinfo").read_text()), str(path))
    except OSError:
        return ""
    return entry.fstype if entry else ""


def _with(spec: WorkloadSpec, **changes: object) -> WorkloadSpec:
    settings = {k: v for k, v in spec.settings if k not in ("rate", "arrivals", "latency_limit")}
    settings.update(changes)
    return WorkloadSpec(spec.name, spec.label, tuple(sorted(settings.items())))


def flat_out(cls: type[Workload], raw: str) -> tuple[float, float]:
    """(transactions or I/Os per second, CPUs the client used; NaN when unknown) of a closed-loop run."""
    doc = json.loads(raw)
    if "transactions" in doc and "elapsed_s" in doc:  # pickfs's own clients
        elapsed = float(doc["elapsed_s"])
        return float(doc["transactions"]) / elapsed, float(doc.get("client_cpu_s", 0.0)) / elapsed
    metrics = cls.parse(raw)  # a tool's own output (fio): its primary metric is the rate
    return float(metrics[cls.primary().name]), float(metrics.get("client_cpu_share", math.nan))


def measure(spec: WorkloadSpec, ledger: Ledger, seconds: float = CEILING_SECONDS) -> Ceiling:
    """Lay the workload's data out in a private directory on /dev/shm, run it flat out, then at the
    rate asked for (at most half the flat-out rate). The directory is written to the ledger before it
    exists and removed whatever happens, after a kill -9 by `pickfs cleanup`. tmpfs has no O_DIRECT:
    a workload set to direct I/O runs buffered there."""
    cls = workload_class(spec.name)
    rate = float(spec.get("rate") or 0.0)
    if spec.get("direct"):
        spec = _with(spec, direct=False, rate=rate, arrivals=spec.get("arrivals") or "poisson")
    scratch = SHM / f"pickfs-ceiling-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    with holding(ledger, "dir", path=str(scratch), recursive=True):
        scratch.mkdir(mode=0o700)  # a new name: mkdir fails on anything already there
        wl = cls(cache=scratch / "cache")
        wl.scratch = scratch / "scratch"  # an embedded engine's lock files, beside its data
        wl.scratch.mkdir(mode=0o700)
        wl.prepare(_with(spec, duration=seconds), scratch)
        most, cpu = flat_out(cls, wl.run(_with(cls.slice_spec(spec, seconds)), scratch).text)
        probe = min(rate, most / 2) if rate > 0 else most / 2
        paced = cls.slice_spec(_with(spec, rate=probe, arrivals=spec.get("arrivals") or "poisson",
                                     latency_limit=0.0), seconds)
        block = fixed_rate_block(wl.run(paced, scratch).text) or {}
        lag = hist_of(block, "wake_us")
        if not lag:
            return Ceiling(most, probe, math.nan, math.nan, cpu)
        return Ceiling(most, probe, (percentile_us(lag, 50) or 0.0) / 1e6, (percentile_us(lag, 99) or 0.0) / 1e6,
                       cpu)


def flag(spec: WorkloadSpec, ceiling: Ceiling) -> str | None:
    """A warning when the rate asked for is beyond what the client itself can keep up with."""
    rate = float(spec.get("rate") or 0.0)
    if rate > TOO_CLOSE * ceiling.max_rate:
        return (f"{spec.label}: the rate {rate:,.0f}/s is above {TOO_CLOSE:.0%} of what the client does in memory "
                f"({ceiling.max_rate:,.0f} tx/s): the figures would measure the client, not the storage; "
                "lower --rate")
    return None


def limit_notes(spec: WorkloadSpec, ledger: Ledger) -> list[str]:
    """What a fixed-rate workload's run should say about the client's own limits (measured now, in memory)."""
    if not spec.get("rate"):
        return []
    why_not = in_memory_possible(spec)
    if why_not:
        return [why_not]
    try:
        ceiling = measure(spec, ledger)
    except (OSError, ValueError, KeyError) as exc:
        return [f"{spec.label}: the client's ceiling in memory could not be measured: {exc}"[:300]]
    except PickfsError as exc:
        return [f"{spec.label}: the client's ceiling in memory could not be measured: {exc.one_line()}"[:300]]
    return [f"{spec.label}: {ceiling.words()}", *filter(None, [flag(spec, ceiling)])]
