"""MariaDB (or MySQL): system tables installed into the filesystem under test, a private
socket, networking off."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pickfs.databases.values import value_text
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
from pickfs.stack.filesystems import which
from pickfs.stack.ledger import Ledger

# Server settings pickfs passes on the command line when a workload names them (None: the server's default).
SETTINGS = ("innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "innodb_flush_method", "sync_binlog",
            "innodb_doublewrite", "log_bin")
OS_USER = "mysql"
DATABASE = "sbtest"


def _first(*names: str) -> str | None:
    for n in names:
        path = which(n)
        if path:
            return path
    return None


def server_binary() -> str | None:
    return _first("mariadbd", "mysqld")


def install_binary() -> str | None:
    return _first("mariadb-install-db", "mysql_install_db")


def client_binary() -> str | None:
    return _first("mariadb", "mysql")


# MariaDB's error for a server shutting down (ER_SERVER_SHUTDOWN); the codes 2000-2999 are the client's own (no
# connection, connection lost), never an answer of the server.
SERVER_SHUTDOWN = 1053


def not_answering_yet(code: int) -> bool:
    """An error of a first query (its code) that says the server does not answer yet, or no longer (it may be
    starting or stopping: ask again, or see it exit), not that it answered with an error (pure)."""
    return 2000 <= code < 3000 or code == SERVER_SHUTDOWN


def first_answer(socket: Path, log: Path) -> str | None:
    """The workloads' database made on the server at `socket` and its version read, over one connection of the
    Python driver (a client process per ask cost more than the ask); None when the server does not answer yet, or
    no longer. ServiceFailed when it answered with an error."""
    import pymysql  # deferred: loaded by the process that starts a server, not by every command

    try:
        conn = pymysql.connect(unix_socket=str(socket), user="root", connect_timeout=10, read_timeout=60,
                               write_timeout=60)
        try:
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
            cur.execute("SELECT VERSION()")
            return str(cur.fetchall()[0][0])
        finally:
            conn.close()
    except pymysql.err.MySQLError as exc:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        if not_answering_yet(code):
            return None
        raise ServiceFailed(f"MariaDB started but its first query failed: {exc}; its log: {log_tail(log)}",
                            "see its log") from None


def private_tmpdir(sockdir: Path, user: str) -> Path:
    """The server's temporary files (sorts, ALTER TABLE copies) in its private, ledger-tracked socket
    directory, not the shared /tmp: removed with it, and after a kill -9 by `pickfs cleanup`."""
    owner = pwd.getpwnam(user)
    tmpdir = sockdir / "tmp"
    tmpdir.mkdir(mode=0o700)
    os.chown(tmpdir, owner.pw_uid, owner.pw_gid)
    return tmpdir


class MariaDB(Service):
    name = "mariadb"
    package = "mariadb-server"
    os_user = OS_USER
    # InnoDB has no shutdown that writes nothing back: a server whose check nothing reads after it is killed (its
    # next start, were there one, would recover as from a power cut); every other stop is its shutdown (SIGTERM)
    at_once_signal = signal.SIGKILL
    server_program = "mariadbd"  # a MySQL server (mysqld) is never ended at once: it is stopped as always

    @classmethod
    def memory_settings(cls, limit: int) -> dict[str, str]:
        """Half the memory for InnoDB's buffer pool (its data bypasses the page cache: O_DIRECT)."""
        return {"innodb_buffer_pool_size": f"{limit // 2 // 1024**2}M"}

    @classmethod
    def not_installed(cls) -> str | None:
        if not server_binary() or not install_binary() or not client_binary():
            return "MariaDB is not installed (apt-get install mariadb-server)"
        return None

    @classmethod
    def serve(cls, stack: ExitStack, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path,
              fresh: bool) -> Endpoint:
        data, log = datadir / "mysql", datadir / "mariadb.log"
        sockdir = private_dirs(stack, ledger, rundir, "my", OS_USER, datadir, data)
        socket, pidfile = sockdir / "mysqld.sock", sockdir / "mysqld.pid"
        tmpdir = private_tmpdir(sockdir, OS_USER)
        if fresh:
            setup_step([install_binary() or "mariadb-install-db", "--no-defaults", f"--datadir={data}",
                        f"--tmpdir={tmpdir}", f"--user={OS_USER}", "--auth-root-authentication-method=normal",
                        "--skip-test-db"], "mariadb-install-db", "is the filesystem writable?",
                       package="mariadb-server", timeout=600)
        argv = [server_binary() or "mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={socket}",
                f"--pid-file={pidfile}", f"--tmpdir={tmpdir}", "--skip-networking", f"--user={OS_USER}",
                f"--log-error={log}"]
        chosen = chosen_settings(settings, SETTINGS, "MariaDB setting")
        argv += [f"--{k.replace('_', '-')}={value_text(v)}" for k, v in chosen.items()]
        group, _ = hold_server(stack, ledger, cls.name, pidfile, "mariadbd" if "mariadbd" in argv[0] else "mysqld",
                               "SIGTERM")
        # Its own session: a Ctrl-C in the terminal reaches pickfs, which then shuts the server down.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=group.preexec())
        # Its socket looked for every few ms (a crash test starts a server per state; a client process asked every
        # 200 ms), then asked in-process: started means it made the database and answered with its version.
        version: list[str] = []

        def answers() -> bool:
            answer = first_answer(socket, log) if pidfile.exists() and socket.exists() else None
            version[:] = [answer] if answer is not None else []
            return answer is not None

        waited = await_ready(answers, lambda: proc.poll() is not None, 120)
        if waited is Waited.EXITED:
            raise ServiceFailed(f"MariaDB did not start: {log_tail(log)}", "check the server settings of this workload")
        if waited is Waited.TIMED_OUT:
            raise ServiceFailed(f"MariaDB did not answer within 120 s: {log_tail(log)}", "see its log")
        # The mariadb/mysql clients let option files (Debian's sets /run/mysqld's socket) override
        # MYSQL_UNIX_PORT; an option file read after those points them at this server instead.
        (sockdir / "my.cnf").write_text(f"[client]\nsocket={socket}\nuser=root\n")
        return Endpoint(
            service=cls.name, socket_dir=str(sockdir), port=0, user="root", database=DATABASE,
            env={"MYSQL_UNIX_PORT": str(socket), "MARIADB_HOME": str(sockdir), "MYSQL_HOME": str(sockdir),
                 "DATABASE_URL": f"mysql://root@localhost/{DATABASE}?unix_socket={socket}"},
            log=str(log), version=version[0], pidfile=str(pidfile))


SERVICE = MariaDB
