"""MariaDB (or MySQL): system tables installed into the filesystem under test, a private
socket, networking off."""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pickfs.databases.values import value_text
from pickfs.proc import run
from pickfs.services.base import (
    Endpoint,
    Service,
    ServiceFailed,
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
        client = [client_binary() or "mariadb", f"--socket={socket}", "--user=root"]
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise ServiceFailed(f"MariaDB did not start: {log_tail(log)}",
                                    "check the server settings of this workload")
            ping = subprocess.run([*client, "-e", "SELECT 1"], capture_output=True)
            if ping.returncode == 0 and pidfile.exists():
                break
            if time.monotonic() > deadline:
                raise ServiceFailed(f"MariaDB did not answer within 120 s: {log_tail(log)}", "see its log")
            time.sleep(0.2)
        run([*client, "-e", f"CREATE DATABASE IF NOT EXISTS {DATABASE}"])
        version = run([*client, "-N", "-e", "SELECT VERSION()"]).text.strip()
        # The mariadb/mysql clients let option files (Debian's sets /run/mysqld's socket) override
        # MYSQL_UNIX_PORT; an option file read after those points them at this server instead.
        (sockdir / "my.cnf").write_text(f"[client]\nsocket={socket}\nuser=root\n")
        return Endpoint(
            service=cls.name, socket_dir=str(sockdir), port=0, user="root", database=DATABASE,
            env={"MYSQL_UNIX_PORT": str(socket), "MARIADB_HOME": str(sockdir), "MYSQL_HOME": str(sockdir),
                 "DATABASE_URL": f"mysql://root@localhost/{DATABASE}?unix_socket={socket}"},
            log=str(log), version=version, pidfile=str(pidfile))


SERVICE = MariaDB
