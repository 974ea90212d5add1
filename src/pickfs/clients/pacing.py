"""Fixed-rate (open-loop) pacing for pickfs's own clients: a schedule of arrivals, and the
accounting of every scheduled transaction (stdlib only).

A closed-loop client sends its next transaction when the last one commits, so a stall delays
the transactions that should have been sent meanwhile without their latency showing it
(coordinated omission). At a fixed rate, transactions are due at times drawn in advance
(Poisson arrivals: exponential gaps; or uniform: equal gaps) and each one's latency is
measured from the moment it was DUE, not the moment it could start: a stall counts against
every transaction it held up.

Every transaction due inside the slice is accounted for, never silently dropped:
- done: it ran; its latency from the schedule, its own service time and its start lag kept
- late: it ran, but began more than LATE_AFTER_S after it was due (it queued behind others)
- skipped: with a latency limit, it would have begun more than the limit after it was due,
  so it was not run (pgbench's --latency-limit)
- unfinished: the backlog left when the slice ended was drained, for at most another slice
  length; what was still waiting then is counted here (and in the skipped share), not run
So a slice carries its own backlog and does not bill the next one.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pickfs.clients.histogram import add

ARRIVALS = ("poisson", "uniform")
LATE_AFTER_S = 0.001  # a transaction that began more than this after it was due is late
SPIN_S = 0.0004  # the last stretch before a due time is waited out on the clock, not in sleep()
RT_PRIORITY = 10  # SCHED_FIFO priority while waiting for a due time


class Waits:
    """Real-time priority (SCHED_FIFO) for this thread while it waits for a due time, normal priority while a
    transaction runs. On a busy machine a sleeping client is woken late by milliseconds (other processes hold
    the CPUs); woken at real-time priority it starts within microseconds, and the transaction itself then
    competes for the CPU as any process does. Where the kernel refuses (not root), waits stay normal."""

    def __init__(self, wanted: bool = True) -> None:
        self.realtime = wanted and hasattr(os, "sched_setscheduler")
        if self.realtime:
            try:
                self.waiting()
                self.working()
            except OSError:
                self.realtime = False

    def waiting(self) -> None:
        if self.realtime:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))

    def working(self) -> None:
        if self.realtime:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def arrival_times(rate: float, arrivals: str, rng: random.Random, start: float, phase: float = 0.0) -> Iterator[float]:
    """Due times from `start` at `rate` per second: exponential gaps (poisson) or equal gaps
    (uniform, the first `phase` of a gap after the start, so several terminals interleave)."""
    if rate <= 0:
        raise ValueError("rate must be positive")
    if arrivals not in ARRIVALS:
        raise ValueError(f"arrivals must be one of {', '.join(ARRIVALS)}")
    poisson = arrivals == "poisson"
    t = start + (rng.expovariate(rate) if poisson else phase / rate)
    while True:
        yield t
        t += rng.expovariate(rate) if poisson else 1.0 / rate


@dataclass
class Book:
    """What became of every transaction due (histograms in microseconds, as clients/histogram.py keeps them)."""

    from_schedule: dict[int, int] = field(default_factory=dict)  # commit time minus due time
    lag: dict[int, int] = field(default_factory=dict)  # actual start minus due time (queueing and scheduling error)
    service: dict[int, int] = field(default_factory=dict)  # commit time minus actual start
    # of the transactions the terminal waited for (idle, nothing queued): start minus due time, the
    # client's own scheduling error (its sleep's overshoot, the kernel's wake-up, other processes)
    wake: dict[int, int] = field(default_factory=dict)
    due: int = 0
    done: int = 0
    late: int = 0
    skipped: int = 0
    unfinished: int = 0
    failed: int = 0

    def ran(self, due: float, started: float, ended: float) -> None:
        self.done += 1
        add(self.from_schedule, max(0, int((ended - due) * 1e6)))
        add(self.lag, max(0, int((started - due) * 1e6)))
        add(self.service, max(0, int((ended - started) * 1e6)))
        if started - due > LATE_AFTER_S:
            self.late += 1

    def as_dict(self) -> dict[str, Any]:
        def keyed(h: dict[int, int]) -> dict[str, int]:
            return {str(k): v for k, v in sorted(h.items())}

        return {"due": self.due, "done": self.done, "late": self.late, "skipped": self.skipped,
                "unfinished": self.unfinished, "failed": self.failed,
                "latency_us": keyed(self.from_schedule), "lag_us": keyed(self.lag), "service_us": keyed(self.service),
                "wake_us": keyed(self.wake)}


def merged_books(books: list[Book]) -> Book:
    out = Book()
    for b in books:
        for mine, theirs in ((out.from_schedule, b.from_schedule), (out.lag, b.lag), (out.service, b.service),
                             (out.wake, b.wake)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        out.due += b.due
        out.done += b.done
        out.late += b.late
        out.skipped += b.skipped
        out.unfinished += b.unfinished
        out.failed += b.failed
    return out


def wait_until(due: float, clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
    """Sleep until just before `due`, then watch the clock (sleep() alone overshoots by ~0.1 ms)."""
    ahead = due - clock() - SPIN_S
    if ahead > 0:
        sleep(ahead)
    while clock() < due:
        pass


def paced(schedule: Iterator[float], window_end: float, attempt: Callable[[], bool], book: Book,
          limit_s: float = 0.0, drain_s: float | None = None, clock: Callable[[], float] = time.perf_counter,
          sleep: Callable[[float], None] = time.sleep, waits: Waits | None = None) -> float:
    """Run `attempt` once at each due time before `window_end` (attempt: True when it committed, False
    when it failed and was rolled back); return the clock when the last one ended. The backlog at
    `window_end` is drained for at most `drain_s` more (default: as long as the window ran); what is
    still waiting then is counted as unfinished."""
    started = clock()
    hard_end = window_end + (window_end - started if drain_s is None else drain_s)
    for due in schedule:
        if due >= window_end:
            break
        book.due += 1
        now = clock()
        if now < due:
            if waits is not None:
                waits.waiting()
            wait_until(due, clock, sleep)
            now = clock()
            if waits is not None:
                waits.working()
            add(book.wake, max(0, int((now - due) * 1e6)))
        if now >= hard_end:
            book.unfinished += 1
            continue
        if limit_s > 0 and now - due > limit_s:
            book.skipped += 1
            continue
        if attempt():
            book.ran(due, now, clock())
        else:
            book.failed += 1
    return clock()


def summary(book: Book, rate: float, arrivals: str, limit_s: float, window_s: float, realtime: bool = False) -> dict[str, Any]:
    """The fixed-rate part of a client's JSON document."""
    return {"offered": rate, "arrivals": arrivals, "limit_s": limit_s, "window_s": window_s,
            "waits": "realtime" if realtime else "normal",
            "late_after_s": LATE_AFTER_S, "backlog": "drained for up to one more window; the rest counted unfinished",
            **book.as_dict()}


def check_rate(rate: float, arrivals: str, limit_s: float) -> None:
    """Raises ValueError naming what is wrong with fixed-rate settings."""
    if not math.isfinite(rate) or rate < 0:
        raise ValueError("rate must be a positive number of transactions per second (0: as fast as it goes)")
    if arrivals not in ARRIVALS:
        raise ValueError(f"arrivals must be one of {', '.join(ARRIVALS)}")
    if not math.isfinite(limit_s) or limit_s < 0:
        raise ValueError("latency_limit must be a duration of 0 or more (0: no limit)")


def add_rate_options(p: object) -> None:
    """A client's fixed-rate arguments (an argparse parser)."""
    add = p.add_argument  # type: ignore[attr-defined]
    add("--rate", type=float, default=0.0, help="transactions due per second, all terminals together (0: closed loop)")
    add("--arrivals", choices=ARRIVALS, default="poisson", help="with --rate: how the due times are spread")
    add("--latency-limit", type=float, default=0.0,
        help="with --rate: seconds; a transaction that would begin later than this after it was due is skipped")
    add("--normal-waits", action="store_true", help="with --rate: wait for due times at normal priority, not real-time")
