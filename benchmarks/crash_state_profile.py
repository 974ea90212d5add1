"""Where a crash state's check goes for a database server, step by step: the server's own start-up (its floor)
against pickfs's start and stop around it.

For PostgreSQL, on a data directory in a scratch directory of its own (no loop device, no recorder: the
server's own costs and pickfs's around them, not the filesystem's), it times:

- the floor: `postgres` run directly as its user, ready when its pid file says so (polled every
  millisecond), on a data directory already recovered and on one that needs crash recovery (left by an
  immediate shutdown), and its stop (fast, SIGINT; immediate, SIGQUIT);
- pickfs's start as a crash check calls it (`PostgreSQL.start(..., fresh=False)`), step by step (socket
  directory and its ledger entry, settings file, control group and process entry, the server's start, its
  version), and the stop (the ExitStack unwinding: the server stopped, its group removed, its directory and
  ledger entries gone);
- one ledger entry written and released, and one control group made and removed.

Prints the median of `--rounds` of each. Root and PostgreSQL:

    sudo flock /tmp/pickfs-bench.lock .venv/bin/python benchmarks/crash_state_profile.py --rounds 10
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from pickfs.services import postgresql as pg
from pickfs.stack import cleanup, tracking
from pickfs.stack.ledger import Ledger

TIMES: dict[str, list[float]] = defaultdict(list)


@contextmanager
def timed(name: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        TIMES[name].append(time.perf_counter() - t0)


def wrap(module: Any, attr: str, name: str) -> None:
    """module.attr timed under `name` each time it is called (a context manager's body not included)."""
    inner = getattr(module, attr)

    def outer(*args: Any, **kwargs: Any) -> Any:
        with timed(name):
            return inner(*args, **kwargs)
    setattr(module, attr, outer)


def wrap_undo(kind: str, name: str) -> None:
    """The undo of a ledger resource kind timed under `name`."""
    k = cleanup.KINDS[kind]
    inner = k.undo

    def outer(e: Any) -> None:
        with timed(name):
            inner(e)
    object.__setattr__(k, "undo", outer)


def ready(pidfile: Path) -> bool:
    """The postmaster says it accepts connections (its pid file's 8th line, as pg_ctl reads it)."""
    try:
        lines = pidfile.read_text().splitlines()
    except OSError:
        return False
    return len(lines) >= 8 and lines[7].strip() == "ready"


def floor(pgdata: Path, sockdir: Path, stop: signal.Signals) -> tuple[float, float]:
    """The server's own start (exec to ready) and stop (signal to exit), run directly as its user."""
    bins = pg.bindir()
    assert bins is not None
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(bins / "postgres"), "-D", str(pgdata), "-c", f"unix_socket_directories={sockdir}",
                             "-c", "listen_addresses="], user=pg.OS_USER, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while not ready(pgdata / "postmaster.pid"):
        if proc.poll() is not None:
            raise SystemExit("postgres exited before it was ready")
        time.sleep(0.001)
    t_up = time.perf_counter() - t0
    t1 = time.perf_counter()
    proc.send_signal(stop)
    proc.wait()
    return t_up, time.perf_counter() - t1


def crashed(pgdata: Path, sockdir: Path) -> None:
    """Leave the data directory needing crash recovery: started, written to, stopped immediately."""
    bins = pg.bindir()
    assert bins is not None
    proc = subprocess.Popen([str(bins / "postgres"), "-D", str(pgdata), "-c", f"unix_socket_directories={sockdir}",
                             "-c", "listen_addresses="], user=pg.OS_USER, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while not ready(pgdata / "postmaster.pid"):
        time.sleep(0.001)
    subprocess.run([str(bins / "psql"), "-h", str(sockdir), "-U", "postgres", "-q", "-c",
                    "CREATE TABLE IF NOT EXISTS t(x int); INSERT INTO t SELECT generate_series(1, 10000);"],
                   user=pg.OS_USER, check=True, capture_output=True)
    proc.send_signal(signal.SIGQUIT)
    proc.wait()


def median_ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:7.1f} ms" if xs else "      -"


def profile_postgresql(rounds: int, root: Path) -> None:
    ledger = Ledger(root / "work" / "ledger")
    datadir = root / "work" / "pg"
    datadir.mkdir(parents=True)
    owner = pwd.getpwnam(pg.OS_USER)
    os.chown(datadir, owner.pw_uid, owner.pw_gid)
    rundir = root / "work" / "run"
    with pg.PostgreSQL.start(datadir, {}, ledger, rundir, fresh=True):
        pass
    pgdata = datadir / "pgdata"
    sockdir = root / "sock"
    sockdir.mkdir()
    os.chown(sockdir, owner.pw_uid, owner.pw_gid)
    for _ in range(rounds):
        up, down = floor(pgdata, sockdir, signal.SIGINT)
        TIMES["floor: start, recovered data directory"].append(up)
        TIMES["floor: fast stop (SIGINT)"].append(down)
        crashed(pgdata, sockdir)
        up, down = floor(pgdata, sockdir, signal.SIGQUIT)
        TIMES["floor: start with crash recovery"].append(up)
        TIMES["floor: immediate stop (SIGQUIT)"].append(down)
    # pickfs's start and stop, step by step, on a data directory needing recovery each time
    wrap(pg, "private_dirs", "  socket directory (ledger entry, mkdir, chown)")
    wrap(pg, "write_settings", "  settings file")
    wrap(pg, "hold_server", "  control group + process entry (2 ledger entries, mkdir)")
    wrap(pg, "run", "  pg_ctl start -w, postgres --version")
    wrap_undo("process", "  stop: the server (process entry's undo)")
    wrap_undo("tracked", "  stop: its control group removed")
    wrap_undo("dir", "  stop: socket directory removed")
    for _ in range(rounds):
        crashed(pgdata, sockdir)
        with ExitStack() as stack:
            with timed("pickfs start (fresh=False), with crash recovery"):
                stack.enter_context(pg.PostgreSQL.start(datadir, {}, ledger, rundir, fresh=False))
            t0 = time.perf_counter()
        TIMES["pickfs stop"].append(time.perf_counter() - t0)
    for _ in range(rounds):
        with timed("one ledger entry written and released"):
            e = ledger.record("dir", path=str(root / "work" / "nothing"))
            ledger.release(e)
        with timed("one control group made and removed (ledger entry included)"):
            with tracking.tracked(ledger, "profile"):
                pass
    print(f"PostgreSQL {pg.bindir()}, medians of {rounds}:")
    for name, xs in TIMES.items():
        print(f"  {median_ms(xs)}  {name}  (n={len(xs)})")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=10)
    a = p.parse_args(argv)
    if pg.bindir() is None:
        print("PostgreSQL is not installed", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="pickfs-profile-", dir="/var/tmp"))
    os.chmod(root, 0o755)
    try:
        profile_postgresql(a.rounds, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0



if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
