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

For MariaDB likewise (`--database mariadb`): the floor, `mariadbd` run directly with the options pickfs gives it,
ready when it answers a query on its socket (asked every millisecond), on a data directory already recovered and
on one that needs crash recovery (200 commits and a 10,000-row one, then kill -9), its shutdown (SIGTERM) and its
kill (SIGKILL); pickfs's start (`MariaDB.start(..., fresh=False)`, with crash recovery) step by step, and its stop,
ordinary (the server's shutdown) and at once (a check nothing reads after).

Prints the median of `--rounds` of each. Root, and the servers profiled installed:

    sudo flock /tmp/pickfs-bench.lock .venv/bin/python benchmarks/crash_state_profile.py --rounds 10
    sudo flock /tmp/pickfs-bench.lock .venv/bin/python benchmarks/crash_state_profile.py --database mariadb
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

from pickfs.services import mariadb as my
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
    """module.attr timed under `name` each time it is called (a context manager's body not included); nothing where
    the module has no such attribute (an older pickfs's)."""
    inner = getattr(module, attr, None)
    if inner is None:
        return

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


def floor(pgdata: Path, sockdir: Path, stop: signal.Signals) -> tuple[float, float]:
    """The server's own start (exec to ready) and stop (signal to exit), run directly as its user."""
    bins = pg.bindir()
    assert bins is not None
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(bins / "postgres"), "-D", str(pgdata), "-c", f"unix_socket_directories={sockdir}",
                             "-c", "listen_addresses="], user=pg.OS_USER, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while not pg.accepting(pgdata / "postmaster.pid"):
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
    while not pg.accepting(pgdata / "postmaster.pid"):
        time.sleep(0.001)
    subprocess.run([str(bins / "psql"), "-h", str(sockdir), "-U", "postgres", "-q", "-c",
                    "CREATE TABLE IF NOT EXISTS t(x int); INSERT INTO t SELECT generate_series(1, 10000);"],
                   user=pg.OS_USER, check=True, capture_output=True)
    proc.send_signal(signal.SIGQUIT)
    proc.wait()


def median_ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:7.1f} ms" if xs else "      -"


def server_made(root: Path, service: Any, os_user: str, name: str) -> tuple[Ledger, Path, Path, pwd.struct_passwd]:
    """A ledger, a data directory owned by the server's user with the server's files made in it by pickfs (started
    fresh once and stopped), the run directory pickfs starts it from, and that user."""
    ledger = Ledger(root / "work" / "ledger")
    datadir = root / "work" / name
    datadir.mkdir(parents=True)
    owner = pwd.getpwnam(os_user)
    os.chown(datadir, owner.pw_uid, owner.pw_gid)
    rundir = root / "work" / "run"
    with service.start(datadir, {}, ledger, rundir, fresh=True):
        pass
    return ledger, datadir, rundir, owner


def profile_postgresql(rounds: int, root: Path) -> None:
    ledger, datadir, rundir, owner = server_made(root, pg.PostgreSQL, pg.OS_USER, "pg")
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
    wrap(pg, "run", "  pg_ctl start (through runuser), postgres --version")
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


def mariadbd(data: Path, sockdir: Path) -> subprocess.Popen[bytes]:
    """mariadbd run directly (no pickfs) on `data`, its socket, pid file and log in `sockdir`, with the options
    pickfs starts it with (services/mariadb.py)."""
    return subprocess.Popen([my.server_binary() or "mariadbd", "--no-defaults", f"--datadir={data}",
                             f"--socket={sockdir / 'mysqld.sock'}", f"--pid-file={sockdir / 'mysqld.pid'}",
                             f"--tmpdir={sockdir / 'tmp'}", "--skip-networking", f"--user={my.OS_USER}",
                             f"--log-error={sockdir / 'mariadbd.log'}"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def mariadb_answers(sock: Path) -> bool:
    """The server at the Unix socket `sock` answers a query (a socket that accepts a connection is not enough:
    mariadbd listens before it serves, and one told to shut down in between was seen to hang)."""
    import pymysql

    if not sock.exists():
        return False
    try:
        conn = pymysql.connect(unix_socket=str(sock), user="root", connect_timeout=10)
    except pymysql.err.MySQLError:
        return False
    try:
        conn.cursor().execute("SELECT 1")
        return True
    except pymysql.err.MySQLError:
        return False
    finally:
        conn.close()


def mariadb_up(proc: subprocess.Popen[bytes], sockdir: Path) -> float:
    """Seconds from now until the server answers a query on its socket, asked every millisecond."""
    t0 = time.perf_counter()
    while not mariadb_answers(sockdir / "mysqld.sock"):
        if proc.poll() is not None:
            raise SystemExit(f"mariadbd exited before it answered: see {sockdir / 'mariadbd.log'}")
        time.sleep(0.001)
    return time.perf_counter() - t0


def mariadb_floor(data: Path, sockdir: Path, stop: signal.Signals) -> tuple[float, float]:
    """The server's own start (exec to answering a query) and stop (signal to exit)."""
    t0 = time.perf_counter()
    proc = mariadbd(data, sockdir)
    try:
        mariadb_up(proc, sockdir)
        t_up = time.perf_counter() - t0
        t1 = time.perf_counter()
        proc.send_signal(stop)
        proc.wait(timeout=120)
        return t_up, time.perf_counter() - t1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def mariadb_crashed(data: Path, sockdir: Path) -> None:
    """Leave the data directory needing crash recovery: started, 200 commits and a 10,000-row one, killed (-9)."""
    import pymysql

    proc = mariadbd(data, sockdir)
    try:
        mariadb_up(proc, sockdir)
        commits(pymysql.connect(unix_socket=str(sockdir / "mysqld.sock"), user="root", autocommit=False))
    finally:
        proc.kill()
        proc.wait()


def commits(conn: Any) -> None:
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS profile")
    cur.execute("USE profile")
    cur.execute("CREATE TABLE IF NOT EXISTS t (id INT AUTO_INCREMENT PRIMARY KEY, x INT, pad CHAR(100))")
    for i in range(200):
        cur.execute("INSERT INTO t (x, pad) VALUES (%s, 'p')", (i,))
        conn.commit()
    cur.execute("INSERT INTO t (x, pad) SELECT seq, 'q' FROM seq_1_to_10000")
    conn.commit()


def profile_mariadb(rounds: int, root: Path) -> None:
    """MariaDB's floor (mariadbd run directly, ready when it answers a query on its socket) on a data directory
    already recovered and on one that needs crash recovery, its shutdown (SIGTERM) and its kill (SIGKILL); pickfs's
    start of the same server (`MariaDB.start(..., fresh=False)`) with crash recovery, step by step, and its stop:
    the ordinary one (its shutdown) and the one at once (a check nothing reads after)."""
    ledger, datadir, rundir, owner = server_made(root, my.MariaDB, my.OS_USER, "my")
    data = datadir / "mysql"
    sockdir = root / "mysock"
    (sockdir / "tmp").mkdir(parents=True)
    for d in (sockdir, sockdir / "tmp"):
        os.chown(d, owner.pw_uid, owner.pw_gid)
    for _ in range(rounds):
        up, down = mariadb_floor(data, sockdir, signal.SIGTERM)
        TIMES["mariadb floor: start, recovered data directory"].append(up)
        TIMES["mariadb floor: shutdown (SIGTERM)"].append(down)
        mariadb_crashed(data, sockdir)
        up, down = mariadb_floor(data, sockdir, signal.SIGKILL)
        TIMES["mariadb floor: start with crash recovery"].append(up)
        TIMES["mariadb floor: kill (SIGKILL)"].append(down)
        # the last start recovered but left the recovery's pages unwritten: shut down once, cleanly
        up, down = mariadb_floor(data, sockdir, signal.SIGTERM)
        TIMES["mariadb floor: shutdown (SIGTERM) after a crash recovery"].append(down)
    # pickfs's start and stop, step by step, on a data directory needing recovery each time
    wrap(my, "private_dirs", "  mariadb: socket directory (ledger entry, mkdir, chown)")
    wrap(my, "private_tmpdir", "  mariadb: its tmpdir")
    wrap(my, "hold_server", "  mariadb: control group + process entry (2 ledger entries, mkdir)")
    wrap(my, "await_ready", "  mariadb: the wait (socket looked for, the first query)")
    wrap(my, "first_answer", "  mariadb:   the first query (connect, CREATE DATABASE, VERSION)")
    wrap(my, "run", "  mariadb: client processes (CREATE DATABASE, VERSION)")
    for at_once in (False, True):
        how = "at once (SIGKILL: a check nothing reads after)" if at_once else "ordinary (its shutdown)"
        for _ in range(rounds):
            mariadb_crashed(data, sockdir)
            with ExitStack() as stack:
                with timed("mariadb: pickfs start (fresh=False), with crash recovery"):
                    stack.enter_context(my.MariaDB.start(datadir, {}, ledger, rundir, fresh=False, at_once=at_once))
                t0 = time.perf_counter()
            TIMES[f"mariadb: pickfs stop, {how}"].append(time.perf_counter() - t0)


FIREBIRD_OPEN = """
import json, sys, time
t0 = time.perf_counter()
import pickfs.clients.commits  # what the check's client process loads before it opens the database
from firebird.driver import connect, create_database, driver_config
t1 = time.perf_counter()
driver_config.fb_client_library.value = sys.argv[2]
db = sys.argv[1]
if sys.argv[3] == "create":
    create_database(db, user="SYSDBA").close()
    c = connect(db, user="SYSDBA")
    cur = c.cursor()
    cur.execute("CREATE TABLE t (x INTEGER)")
    c.commit()
    for i in range(200):
        cur.execute("INSERT INTO t VALUES (?)", (i,))
    c.commit()
    c.close()
opens = []
for _ in range(int(sys.argv[4])):
    t = time.perf_counter()
    c = connect(db, user="SYSDBA")
    cur = c.cursor()
    cur.execute("SELECT COUNT(*) FROM t")
    cur.fetchall()
    c.commit()
    c.close()
    opens.append(time.perf_counter() - t)
print(json.dumps({"imports": t1 - t0, "opens": opens}))
"""


def profile_firebird(rounds: int, root: Path) -> None:
    """Embedded Firebird as a crash check runs it: a process per state (Python, pickfs's client, the driver), the
    engine's open of the database (no log to replay: its floor), and gfix -v."""
    from pickfs.databases.firebird import fbclient, firebird_env

    lib = fbclient()
    if lib is None:
        print("Firebird's client library is not installed: Firebird not profiled")
        return
    datadir = root / "fb"
    datadir.mkdir()
    env = {**os.environ, **firebird_env(datadir)}
    db = datadir / "p.fdb"
    cmd = [sys.executable, "-c", FIREBIRD_OPEN, str(db), lib]
    subprocess.run([*cmd, "create", "1"], env=env, check=True, capture_output=True)
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = subprocess.run([*cmd, "open", "5"], env=env, check=True, capture_output=True, text=True).stdout
        TIMES["firebird: a check's process, whole (Python, imports, 5 opens)"].append(time.perf_counter() - t0)
        doc = __import__("json").loads(out.strip().splitlines()[-1])
        TIMES["firebird:   imports (pickfs's client, firebird.driver)"].append(doc["imports"])
        TIMES["firebird:   floor: first open of the database in a process (engine start, attach, query, detach)"
              ].append(doc["opens"][0])
        TIMES["firebird:   later opens in the same process"].extend(doc["opens"][1:])
        with timed("firebird: gfix -v -full -n"):
            subprocess.run(["gfix", "-v", "-full", "-n", str(db)], env=env, check=True, capture_output=True)
    with timed("python -c pass"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


class TimedContext:
    """A context manager whose entering and leaving are timed under two names."""

    def __init__(self, inner: Any, enter: str, leave: str) -> None:
        self.inner, self.enter, self.leave = inner, enter, leave

    def __enter__(self) -> Any:
        with timed(self.enter):
            return self.inner.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        with timed(self.leave):
            return self.inner.__exit__(*exc)


def profile_crashtest(argv: list[str]) -> None:
    """`pickfs crashtest` run in this process with the steps of each state's check timed (summed over both
    workbenches' threads, per state checked)."""
    from pickfs.cli.main import main as pickfs_main
    from pickfs.crash import log as wlog
    from pickfs.crash import runner, station

    def wrap_cm(owner: Any, attr: str, enter: str, leave: str) -> None:
        inner = getattr(owner, attr)

        def outer(*args: Any, **kwargs: Any) -> TimedContext:
            return TimedContext(inner(*args, **kwargs), enter, leave)
        setattr(owner, attr, outer)

    wrap(runner.StateChecker, "check", "a state, whole (building it, its check, undoing it)")
    wrap(runner.Workbench, "prepare", "  building the state's image")
    wrap(runner.Workbench, "checked", "  reading the check's writes")
    checked = runner.Workbench.checked
    sent: dict[str, list[int]] = defaultdict(list)

    def counted(bench: Any) -> Any:
        """What each check sent through the recorder: writes, their bytes, flushes."""
        found = checked(bench)
        sent["writes"].append(sum(1 for r in found if r.kind == wlog.WRITE))
        sent["KiB written"].append(sum(r.length for r in found if r.kind == wlog.WRITE) // 1024)
        sent["flushes"].append(sum(1 for r in found if r.kind == wlog.FLUSH))
        return found
    runner.Workbench.checked = counted
    wrap(runner.Workbench, "reset", "  undoing them")
    wrap_cm(station.Station, "attached", "  loop device ready", "  its cached blocks dropped (or detached)")
    wrap_cm(station.Station, "mounted", "  mount (journal replay)", "  unmount")
    wrap(station.Station, "let_go", "  device let go")
    wrap_cm(runner, "_server", "  server start (its recovery)", "  server stop")
    wrap(runner.Commits, "check", "  the database's check (client)")
    wrap(runner, "fsck", "  fsck")
    t0 = time.perf_counter()
    try:
        pickfs_main(["crashtest", *argv])
    except SystemExit:
        pass
    wall = time.perf_counter() - t0
    states = len(TIMES.get("a state, whole (building it, its check, undoing it)", []))
    print(f"pickfs crashtest {' '.join(argv)}: {wall:.1f} s, {states} states checked; per state, mean ms "
          f"(summed over the workbenches' threads):")
    for name, xs in TIMES.items():
        print(f"  {sum(xs) / max(states, 1) * 1000:7.1f} ms  {name}  (n={len(xs)})")
    for name, ns in sent.items():
        print(f"  a check sent through the recorder: {name}, median {statistics.median(ns):,.0f}, "
              f"most {max(ns):,} (n={len(ns)})")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--database", action="append", choices=("postgresql", "firebird", "mariadb"), default=[],
                   help="repeatable; default all three")
    p.add_argument("--crashtest", nargs=argparse.REMAINDER, default=None,
                   help="the rest: options of pickfs crashtest, run in this process with each state's steps timed")
    a = p.parse_args(argv)
    if a.crashtest is not None:
        profile_crashtest(a.crashtest)
        return 0
    a.database = a.database or ["postgresql", "firebird", "mariadb"]
    root = Path(tempfile.mkdtemp(prefix="pickfs-profile-", dir="/var/tmp"))
    os.chmod(root, 0o755)
    try:
        if "firebird" in a.database:
            profile_firebird(a.rounds, root)
        if "postgresql" in a.database:
            if pg.bindir() is None:
                print("PostgreSQL is not installed: not profiled")
            else:
                profile_postgresql(a.rounds, root)
        if "mariadb" in a.database:
            reason = my.MariaDB.unavailable_reason()
            if reason:
                print(f"{reason}: MariaDB not profiled")
            else:
                profile_mariadb(a.rounds, root)
        print(f"medians of {a.rounds} rounds:")
        for name, xs in TIMES.items():
            print(f"  {median_ms(xs)}  {name}  (n={len(xs)})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0



if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
