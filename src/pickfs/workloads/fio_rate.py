"""fio at a fixed rate: fio's own arrival schedule rebuilt, and each I/O's latency measured from it (pure).

How fio paces (`rate_iops`, backend.c usec_for_io and io_u.c rate_ddir): after issuing an I/O it sets
the next one's due time on a schedule that runs from the job's start regardless of how the I/Os went
(`rate_process=linear`: the k-th I/O due at k / rate; `poisson`: the sum of k exponential gaps drawn
from its own generator). Before an I/O it sleeps until the due time; when it is behind it issues at
once, back to back, until it has caught up. So fio keeps an open schedule, but its `lat` (slat + clat)
runs from the moment it issued each I/O, not from the moment the I/O was due: an I/O that waited
behind a stall shows only its own service time. fio's own latency figures hide coordinated omission.

pickfs therefore rebuilds the schedule fio followed (its generator with the job's seeds: randrepeat
on, randseed 0x89, one schedule per job and direction) and measures each I/O from its due time,
with fio's per-I/O latency log (write_lat_log with log_avg_msec=0: completion time in whole
milliseconds since the job started, total latency in nanoseconds, direction). An I/O's completion
is taken as the latest of what is known of it: its logged millisecond, its due time plus its own
latency, and (one I/O at a time, iodepth 1) the previous I/O's completion plus its own latency. That is
a lower bound of the true completion, within 1 ms of it. The rebuilt schedule is checked against the
log: an I/O cannot complete before it was due plus its own latency; when more than
MISMATCH_SHARE of the I/Os would have, the schedule was not fio's and the slice fails instead of
reporting wrong figures.

fio stops at its runtime: I/Os due inside the runtime and not completed are counted unfinished (the
backlog is not drained). fsync/fdatasync calls are not rate-controlled and not in the latency log;
their time shows in the I/Os they delayed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pickfs.clients.histogram import add
from pickfs.clients.pacing import LATE_AFTER_S

RANDSEED = 0x89  # fio's default randseed; with randrepeat (the default) every seed derives from it
_GOLDEN = 0x9E370001
_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
POISSON_OFFSETS = (15, 17)  # FIO_RAND_POISSON_OFF and FIO_RAND_POISSON2_OFF: reads' and writes' schedules
_SEED_COUNT = 21  # FIO_RAND_NR_OFFS
MISMATCH_SHARE = 0.01
SLACK_US = 1000  # on top of the log's whole millisecond: fio's clock reads and its own work around an I/O
DIRECTIONS = {0: "read", 1: "write"}


def job_seeds(thread_number: int, randseed: int = RANDSEED) -> list[int]:
    """fio's per-job random seeds (init.c setup_random_seeds, randrepeat on)."""
    seed = randseed
    for _ in range(4):
        seed = (seed * _GOLDEN) & _M64
    out = []
    for i in range(_SEED_COUNT):
        out.append((seed * thread_number + i) & _M64)
        seed = (seed * _GOLDEN) & _M64
    return out


class Taus88:
    """fio's 32-bit combined Tausworthe generator (lib/rand.c), seeded as init_rand_seed(.., use64=0) does."""

    def __init__(self, seed: int) -> None:
        seed &= _M32

        def lcg(x: int) -> int:
            return ((x * 69069) & _M32) ^ seed

        def floor(x: int, m: int) -> int:
            return (x + m if x < m else x) & _M32

        self.s1 = floor(lcg(53), 1)  # fio's (2^31)+(2^17)+(2^7): 2^n is XOR in C, so 53
        self.s2 = floor(lcg(self.s1), 7)
        self.s3 = floor(lcg(self.s2), 15)
        for _ in range(6):
            self.next()

    def next(self) -> int:
        def step(s: int, a: int, b: int, c: int, d: int) -> int:
            return (((s & c) << d) & _M32) ^ ((((s << a) & _M32) ^ s) >> b)

        self.s1 = step(self.s1, 13, 19, 4294967294, 12)
        self.s2 = step(self.s2, 2, 25, 4294967288, 4)
        self.s3 = step(self.s3, 3, 11, 4294967280, 17)
        return self.s1 ^ self.s2 ^ self.s3


def _logf() -> Any:
    """The C library's single-precision log, as fio calls it (the gaps must match fio's to the microsecond)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    fn = libm.logf
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


_LOGF = _logf()


def due_times_us(iops: int, arrivals: str, seed: int) -> Iterator[int]:
    """fio's due times in microseconds since the job started, for one job and direction: the first at 0."""
    if iops < 1:
        raise ValueError("fio's rate_iops must be at least 1")
    t = 0
    if arrivals == "uniform":  # rate_process=linear: the k-th at k blocks / bytes per second, truncated
        k = 0
        while True:
            yield k * 1000000 // iops
            k += 1
    mean = ctypes.c_float(1000000 // iops).value
    rng = Taus88(seed)
    while True:
        yield t
        x = (rng.next() + 1.0) / 4294967296.0
        gap = ctypes.c_float(mean * -_LOGF(x)).value  # (int64)(1e6 / iops) * -logf(u), in float
        t += int(gap)


@dataclass(frozen=True)
class LogEntry:
    done_ms: int  # completion, whole milliseconds since the job started
    lat_ns: int  # fio's total latency (from issue to completion)
    direction: int  # 0 read, 1 write


def parse_lat_log(text: str) -> list[LogEntry]:
    """fio's per-I/O latency log (time_ms, value_ns, ddir, bs[, offset][, prio]) -> entries, in log order."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0]:
            continue
        direction = int(parts[2])
        if direction in DIRECTIONS:
            out.append(LogEntry(int(parts[0]), int(parts[1]), direction))
    return out


@dataclass(frozen=True)
class JobRate:
    """One fio job's fixed-rate setting: I/Os per second per direction (fio's rate_iops), and its job number."""

    thread_number: int
    iops: Mapping[int, int]  # direction -> rate_iops


def fold_job(entries: Sequence[LogEntry], job: JobRate, arrivals: str, runtime_us: int, depth: int,
             book: dict[str, Any]) -> None:
    """Add one job's I/Os to `book` (due, done, late, unfinished, histograms): each I/O's latency from its due time."""
    seeds = job_seeds(job.thread_number)
    schedules = {d: due_times_us(n, arrivals, seeds[POISSON_OFFSETS[d]]) for d, n in job.iops.items() if n > 0}
    previous = 0.0
    for e in entries:
        if e.direction not in schedules:
            raise ValueError(f"fio logged a {DIRECTIONS[e.direction]} the job has no rate for")
        due = next(schedules[e.direction])
        lat = e.lat_ns / 1000
        if due >= runtime_us:
            # due after the runtime: fio issues it as its runtime ends, early (it sleeps only up to the runtime);
            # counted neither way
            continue
        done = max(e.done_ms * 1000.0, due + lat, previous + lat if depth == 1 else 0.0)
        previous = done
        if e.done_ms * 1000 + 1000 + SLACK_US < due + lat:
            book["mismatched"] += 1
        book["done"] += 1
        start_lag = max(0.0, done - lat - due)
        add(book["hist"], max(0, int(done - due)))
        add(book["lag"], int(start_lag))
        add(book["service"], int(lat))
        if start_lag > LATE_AFTER_S * 1e6:
            book["late"] += 1
    for d, n in job.iops.items():
        if n > 0:
            book["due"] += sum(1 for _ in _until(due_times_us(n, arrivals, seeds[POISSON_OFFSETS[d]]), runtime_us))


def _until(times: Iterator[int], end_us: int) -> Iterator[int]:
    for t in times:
        if t >= end_us:
            return
        yield t


def fixed_rate_block(logs: Mapping[int, str], jobs: Sequence[JobRate], arrivals: str, runtime_us: int, depth: int,
                     limit_s: float = 0.0) -> dict[str, Any]:
    """Every job's latency log -> the fixed-rate block pickfs's own clients write (clients/pacing.py), so fio's
    slices take part in the fixed-rate tables and the capacity search as the database workloads' do (pure).
    Raises ValueError when the rebuilt schedule does not match the log (see the module's note)."""
    book: dict[str, Any] = {"due": 0, "done": 0, "late": 0, "mismatched": 0, "hist": {}, "lag": {}, "service": {}}
    for job in jobs:
        fold_job(parse_lat_log(logs.get(job.thread_number, "")), job, arrivals, runtime_us, depth, book)
    logged = book["done"]
    if logged and book["mismatched"] > MISMATCH_SHARE * logged:
        raise ValueError(f"fio's schedule could not be rebuilt: {book['mismatched']} of {logged} I/Os completed "
                         "before they were due (a fio whose pacing differs from 3.x's)")
    due = max(book["due"], book["done"])

    def keyed(h: dict[int, int]) -> dict[str, int]:
        return {str(k): v for k, v in sorted(h.items())}

    rate = sum(n for job in jobs for n in job.iops.values())
    return {"offered": float(rate), "arrivals": arrivals, "limit_s": limit_s, "window_s": runtime_us / 1e6,
            "waits": "fio", "late_after_s": LATE_AFTER_S,
            "backlog": "fio stops at its runtime: I/Os due and not completed are counted unfinished",
            "latency_from": "fio's rebuilt schedule; completion a lower bound within 1 ms",
            "due": due, "done": book["done"], "late": book["late"], "skipped": 0, "unfinished": due - book["done"],
            "failed": 0, "latency_us": keyed(book["hist"]), "lag_us": keyed(book["lag"]),
            "service_us": keyed(book["service"]), "wake_us": {}}


def split_rate(rate: float, read_share: float, jobs: int) -> dict[int, int]:
    """A total rate as fio's whole rate_iops per job and direction (reads, writes); ValueError when a direction
    that runs would get less than one I/O per second per job (fio would then not pace it at all)."""
    shares = {0: read_share, 1: 1.0 - read_share}
    out = {}
    for d, share in shares.items():
        if share <= 0:
            continue
        per_job = rate * share / jobs
        if per_job < 1:
            raise ValueError(f"{rate:g}/s gives the {DIRECTIONS[d]}s of each of {jobs} fio jobs under 1 I/O per second")
        out[d] = max(1, round(per_job))
    return out
