"""Which crash states' checks are slow, and what the database said meanwhile: records a workload once, checks
power-cut states of it as a crash test does (two workbenches where the filesystem allows, duplicates checked once,
a share of states that lose power again during recovery, servers started and ended as for a discarded check), and
for every state prints how long its check took and what it found; for each state whose check took `--slow` seconds or
more, the server's own log of that check, read from the state's image (debugfs: ext2/3/4 only) before it is undone.
With `--statement-times` PostgreSQL logs every statement's duration, its connections and its lock waits, and the
slowest statement of the checks that found nothing wrong is printed: the time a check's statements need.

Runs on the real recorder, filesystems and servers (root; an integration run: under the itest lock):

    flock /tmp/pickfs-itest.lock .venv/bin/python benchmarks/crash_slow_checks.py --fs ext4-nobarrier \\
        --workload pgbench --set fsync=off --states 300
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pickfs.crash.identity import Identities
from pickfs.crash.runner import StateResult, check_states, checkers_for, driver_for, recorded, workbenches, workers_for
from pickfs.crash.states import DEFAULT_UNIT, generate
from pickfs.plan import resolve_fs_name
from pickfs.plan.flags import workload_specs
from pickfs.safepaths import MARKER
from pickfs.services import postgresql as pg
from pickfs.stack.ledger import Ledger

LOG = "/pickfs-data/postgresql.log"  # the server's log on the state's filesystem (services/postgresql.py)
DURATION = re.compile(r"duration: ([0-9.]+) ms\s+(?:statement|parse [^:]*|bind [^:]*|execute [^:]*): (.*)")


def server_log(image: Path) -> str:
    """The server's log on an ext2/3/4 image, as the check left it."""
    proc = subprocess.run(["debugfs", "-R", f"cat {LOG}", str(image)], capture_output=True, text=True,
                          errors="replace")
    return proc.stdout


def statement_times(text: str) -> list[tuple[float, str]]:
    """(ms, statement) of each statement a log with log_min_duration_statement = 0 timed (pure)."""
    return [(float(m.group(1)), m.group(2)) for m in DURATION.finditer(text)]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fs", default="ext4-nobarrier")
    p.add_argument("--workload", default="pgbench")
    p.add_argument("--set", action="append", default=[], dest="sets")
    p.add_argument("--states", type=int, default=300)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--recovery", type=float, default=0.25, help="share of states with a second power cut")
    p.add_argument("--size", type=int, default=512, help="image MiB")
    p.add_argument("--slow", type=float, default=20.0, help="a check this many seconds or longer is shown in full")
    p.add_argument("--statement-times", action="store_true", help="PostgreSQL: log every statement's duration")
    a = p.parse_args(argv)
    spec = workload_specs((a.workload,), tuple(a.sets), None)[0]  # as `pickfs crashtest --workload --set` reads them
    config = resolve_fs_name(a.fs)
    if a.statement_times:
        plain = pg.server_settings

        def timed(sockdir: Path, chosen: dict[str, Any]) -> dict[str, str]:
            return {**plain(sockdir, chosen), "log_min_duration_statement": "0", "log_connections": "on",
                    "log_lock_waits": "on"}

        pg.server_settings = timed  # type: ignore[assignment]
    slow: list[tuple[StateResult, str]] = []
    times: list[tuple[float, str]] = []  # statements of the checks that found nothing wrong
    logs: dict[int, str] = {}  # state -> its server's log (the last check of it)
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="pickfs-slow-") as tmp:
        workdir = Path(tmp)
        workdir.chmod(0o755)  # a server's own user walks through it to its data directory
        (workdir / MARKER).touch(mode=0o600)
        ledger = Ledger(workdir / "ledger")
        driver = driver_for(spec, workdir)
        with recorded(config, spec, workdir, ledger, a.size * 1024**2, a.duration, a.seed, driver) as rec:
            states = generate(rec.records, rec.t_start, rec.t_end, a.states, a.seed, DEFAULT_UNIT, rec.events,
                              a.recovery)
            identities = Identities(rec.log, rec.records, rec.first)
            ids = [None if st.recovery else identities.of(st.durable, st.kept) for st in states]
            print(f"recorded {len(rec.acks)} acks, {rec.last - rec.first} records, {len(rec.events)} events; "
                  f"{len(states)} states, {len(set(i for i in ids if i is not None))} identities", flush=True)
            workers = workers_for(str(driver.backend), config.fstype)
            with workbenches(rec, ledger, workers, rewinds=False) as (benches, _), ExitStack() as stack:
                checkers = checkers_for(config, rec, ledger, driver, benches, stack, a.seed, DEFAULT_UNIT)
                for checker in checkers:  # the server's log read from the image before the state is undone
                    bench = checker.bench
                    at: dict[str, Any] = {}
                    prepare, reset = bench.prepare, bench.reset

                    def prepared(st: Any, prepare: Any = prepare, at: dict[str, Any] = at) -> None:
                        at["index"] = st.index
                        prepare(st)

                    def undone(forget_log: bool = True, reset: Any = reset, bench: Any = bench,
                               at: dict[str, Any] = at) -> None:
                        logs[at["index"]] = server_log(bench.served.backing)
                        reset(forget_log)

                    bench.prepare, bench.reset = prepared, undone  # type: ignore[method-assign]
                t0 = time.monotonic()
                results = []
                for r in check_states(checkers, states, ids, threading.Event()):
                    results.append(r)
                    text = logs.pop(r.index, "")
                    print(f"state {r.index}: {r.seconds:6.2f} s {'failed' if r.failed else 'ok'}"
                          f"{' (same image as ' + str(r.same_as) + ')' if r.same_as >= 0 else ''}"
                          f"{' (recovery crashed)' if r.recovery else ''}: {r.problem[:200]}", flush=True)
                    if r.seconds >= a.slow:
                        slow.append((r, text))
                    if r.same_as < 0 and not r.problem and not r.recovery:
                        times += statement_times(text)
                wall = time.monotonic() - t0
    print(f"\n{len(results)} states checked in {wall:.0f} s ({workers} at a time); "
          f"{sum(1 for r in results if r.failed)} failed; {len(slow)} took {a.slow:.0f} s or more")
    secs = sorted(r.seconds for r in results if r.same_as < 0)
    if secs:
        print(f"distinct states' checks: median {statistics.median(secs):.2f} s, "
              f"99th percentile {secs[int(0.99 * (len(secs) - 1))]:.2f} s, longest {secs[-1]:.2f} s")
    for r, text in slow:
        print(f"\n=== state {r.index} ({r.mode}, {r.why}; {r.seconds:.1f} s): {r.problem}\n{text[-6000:]}")
    if times:
        worst = sorted(times, reverse=True)
        print(f"\n{len(times)} statements of checks that found nothing wrong: median "
              f"{statistics.median(ms for ms, _ in times):.1f} ms, slowest:")
        for ms, what in worst[:5]:
            print(f"  {ms:9.1f} ms  {what[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
