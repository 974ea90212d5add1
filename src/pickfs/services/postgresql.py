"""PostgreSQL: initdb into the filesystem under test, a private socket, no TCP listener."""

from __future__ import annotations

import functools
import glob
import os
import pwd
import signal
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pickfs.databases.values import value_text
from pickfs.errors import CommandFailed
from pickfs.proc import run
from pickfs.services.base import (
    Endpoint,
    Service,
    ServiceFailed,
    Waited,
    await_ready,
    chosen_settings,
    hold_server,
    log_tail,
    private_dirs,
    setup_step,
)
from pickfs.stack.ledger import Ledger

# Server settings pickfs passes on the command line when a workload names them.
SETTINGS = ("shared_buffers", "checkpoint_timeout", "max_wal_size", "fsync", "synchronous_commit",
            "wal_sync_method", "full_page_writes", "data_sync_retry")
PORT = 5432
CONF = "pickfs.conf"
OS_USER = "postgres"


def bindir() -> Path | None:
    """The newest installed server's binaries (Debian keeps them per major version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    return Path(found[-1]).parent if found else None


def server_settings(sockdir: Path, settings: dict[str, Any]) -> dict[str, str]:
    """What the server is started with: a private socket, no TCP, and the workload's settings, each
    checked against its setting's shape (pure; PlanError for a value that is not one)."""
    chosen = chosen_settings(settings, SETTINGS, "PostgreSQL setting")
    return {"listen_addresses": "", "unix_socket_directories": str(sockdir), "port": str(PORT),
            **{k: value_text(v) for k, v in chosen.items()}}


def conf_text(values: dict[str, str]) -> str:
    """postgresql.conf lines, every value quoted (pure)."""
    return "".join(f"{k} = '{v.replace(chr(39), chr(39) * 2)}'\n" for k, v in values.items())


def write_settings(pgdata: Path, values: dict[str, str]) -> None:
    """The settings into pgdata/pickfs.conf (owned by postgres, 0600), included last by postgresql.conf."""
    owner = pwd.getpwnam(OS_USER)
    fd = os.open(pgdata / CONF, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchown(fh.fileno(), owner.pw_uid, owner.pw_gid)
        fh.write(conf_text(values))
    main = pgdata / "postgresql.conf"
    line = f"include '{CONF}'\n"
    if line not in main.read_text():
        with open(main, "a") as fh:
            fh.write(line)


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", OS_USER, "--", *argv]


def pidfile_ready(text: str) -> bool:
    """A postmaster.pid's text says the server accepts connections (its 8th line, as pg_ctl -w reads it; pure)."""
    lines = text.splitlines()
    return len(lines) >= 8 and lines[7].strip() == "ready"


def accepting(pidfile: Path) -> bool:
    try:
        return pidfile_ready(pidfile.read_text())
    except OSError:
        return False


@functools.cache
def server_version(postgres: Path) -> str:
    """`postgres --version` of one installed server, asked once (a crash test starts a server per state)."""
    return run([str(postgres), "--version"]).text.strip()


class PostgreSQL(Service):
    name = "postgresql"
    package = "postgresql"
    os_user = OS_USER
    at_once_signal = signal.SIGQUIT  # immediate shutdown: no shutdown checkpoint, the next start recovers
    server_program = "postgres"

    @classmethod
    def memory_settings(cls, limit: int) -> dict[str, str]:
        """A quarter of the memory for shared_buffers (PostgreSQL's own advice); the page cache keeps the rest."""
        return {"shared_buffers": f"{limit // 4 // 1024**2}MB"}

    @classmethod
    def not_installed(cls) -> str | None:
        return "PostgreSQL is not installed (apt-get install postgresql)" if bindir() is None else None

    @classmethod
    def serve(cls, stack: ExitStack, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path,
              fresh: bool) -> Endpoint:
        bins = bindir()
        assert bins is not None
        pgdata, log = datadir / "pgdata", datadir / "postgresql.log"
        sockdir = private_dirs(stack, ledger, rundir, "pg", OS_USER, datadir)
        if fresh:
            setup_step(_as_postgres([str(bins / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust",
                                     "-E", "UTF8", "--locale=C", "--no-instructions"]), "initdb",
                       "see the message; is the filesystem writable?", package="postgresql", timeout=300)
        else:  # an existing cluster after a power cut: its postmaster is long gone
            (pgdata / "postmaster.pid").unlink(missing_ok=True)
        # The settings go into a file the server includes, never onto pg_ctl's -o (a shell line).
        write_settings(pgdata, server_settings(sockdir, settings))
        # Recorded before it starts: cleanup finds the postmaster through its pid file.
        group, _ = hold_server(stack, ledger, cls.name, pgdata / "postmaster.pid", cls.server_program, "SIGINT")
        # In its control group, pg_ctl only starts the server (-W) and pickfs waits, asking its pid file every few
        # milliseconds (pg_ctl -w asks every 100 ms) and seeing it exit by its group emptying; without a group, pg_ctl
        # waits (it knows the pid it started).
        wait = ["-W"] if group.path is not None else ["-w", "-t", "120"]
        try:
            run(_as_postgres([str(bins / "pg_ctl"), "-D", str(pgdata), "-l", str(log), *wait, "start"]),
                package="postgresql", timeout=180, preexec=group.preexec())
        except CommandFailed:
            raise ServiceFailed(f"PostgreSQL did not start: {log_tail(log)}",
                                "check the server settings of this workload") from None
        if group.path is not None:
            waited = await_ready(lambda: accepting(pgdata / "postmaster.pid"), lambda: not group.members(), 120)
            if waited is Waited.EXITED:
                raise ServiceFailed(f"PostgreSQL did not start: {log_tail(log)}",
                                    "check the server settings of this workload")
            if waited is Waited.TIMED_OUT:
                raise ServiceFailed(f"PostgreSQL did not accept connections within 120 s: {log_tail(log)}",
                                    "see its log")
        version = server_version(bins / "postgres")
        return Endpoint(
            service=cls.name, socket_dir=str(sockdir), port=PORT, user="postgres", database="postgres",
            env={"PGHOST": str(sockdir), "PGPORT": str(PORT), "PGUSER": "postgres", "PGDATABASE": "postgres",
                 "DATABASE_URL": f"postgresql://postgres@/postgres?host={sockdir}&port={PORT}"},
            log=str(log), version=version, pidfile=str(pgdata / "postmaster.pid"))


SERVICE = PostgreSQL
