"""Firebird: a private server (Debian's firebird3.0-server) in SuperClassic mode, as R5 ran it.

Everything is its own: a root directory under pickfs's run directory holding its firebird.conf
(SuperClassic, listening on 127.0.0.1 only, on a free port), its databases.conf, its security
database (made from Debian's security.sql, with a SYSDBA password drawn for this server alone) and
its lock files; the engine's binaries, messages and plugins are linked from the installed ones.
Databases live where the workload puts them: on the filesystem under test, or on the raw device.
The server runs in its own session, is recorded in the ledger before it starts, and is stopped
(SIGTERM) before the filesystem is unmounted.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pickfs.errors import CommandFailed
from pickfs.proc import run
from pickfs.services.base import Endpoint, Service, ServiceFailed, Waited, await_ready, hold_server, log_tail
from pickfs.stack.cleanup import holding
from pickfs.stack.ledger import Ledger
from pickfs.stack.workdir import PRIVATE_MODE, WORKDIR_MODE, private_dir

SERVER = "/usr/sbin/firebird"
ENGINE_ROOT = "/usr/lib/x86_64-linux-gnu/firebird/3.0"
SECURITY_SQL = "/usr/share/firebird/3.0/security.sql"
LINKED = ("firebird.msg", "intl", "plugins", "lib", "UDF", "plugins.conf", "fbtrace.conf")
PAGE_BYTES = 8192  # the page size of the databases the clients create (Firebird 3's default)


def config_text(port: int, security_db: Path, settings: dict[str, Any]) -> str:
    """The private server's firebird.conf (pure)."""
    lines = [f"RemoteServicePort = {port}", "RemoteBindAddress = 127.0.0.1", "ServerMode = SuperClassic",
             f"SecurityDatabase = {security_db}", "UdfAccess = None", "WireCrypt = Disabled"]
    pages = settings.get("firebird_cache_pages")
    if pages not in (None, ""):
        lines.append(f"DefaultDbCachePages = {int(pages)}")
    return "\n".join(lines) + "\n"


def free_port() -> int:
    """A TCP port on the loopback nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class FirebirdServer(Service):
    name = "firebird"
    package = "firebird3.0-server"

    @classmethod
    def not_installed(cls) -> str | None:
        if not os.path.exists(SERVER) or not os.path.exists(SECURITY_SQL):
            return "the Firebird server is not installed (apt-get install firebird3.0-server)"
        if not os.path.exists(f"{ENGINE_ROOT}/plugins/libEngine12.so"):
            return "Firebird's engine is missing (apt-get install firebird3.0-server-core)"
        return None

    @classmethod
    def memory_settings(cls, limit: int) -> dict[str, str]:
        """A quarter of the memory for the page cache of each database (SuperClassic: per attachment)."""
        return {"firebird_cache_pages": str(max(50, limit // 4 // PAGE_BYTES))}

    @classmethod
    def serve(cls, stack: ExitStack, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path,
              fresh: bool) -> Endpoint:
        parent = private_dir(rundir, WORKDIR_MODE)  # 0711: other servers' users pass through it
        root = parent / f"fb-{uuid.uuid4().hex[:12]}"
        stack.enter_context(holding(ledger, "dir", path=str(root), recursive=True))
        root.mkdir(mode=PRIVATE_MODE)
        conf, lock = root / "conf", root / "lock"
        conf.mkdir(mode=PRIVATE_MODE)
        lock.mkdir(mode=PRIVATE_MODE)
        for name in LINKED:
            if os.path.exists(f"{ENGINE_ROOT}/{name}"):
                (conf / name).symlink_to(f"{ENGINE_ROOT}/{name}")
        security = root / "security3.fdb"
        port = free_port()
        (conf / "firebird.conf").write_text(config_text(port, security, settings))
        (conf / "databases.conf").write_text(f"security.db = {security}\n")
        env = {"FIREBIRD": str(conf), "FIREBIRD_LOCK": str(lock), "FIREBIRD_TMP": str(lock), "LANG": "C"}
        password = secrets.token_hex(8)
        try:  # the security database, made as Debian's postinst makes it, through the embedded engine
            run(["isql-fb", "-q", "-user", "SYSDBA"], input_text=f"create database '{security}';\n", env=env,
                package="firebird3.0-utils", timeout=120)
            run(["isql-fb", "-q", "-user", "SYSDBA", "-i", SECURITY_SQL, str(security)], env=env,
                package="firebird3.0-utils", timeout=300)
            run(["isql-fb", "-q", "-user", "SYSDBA", str(security)], env=env, package="firebird3.0-utils",
                input_text=f"create or alter user SYSDBA password '{password}' using plugin Srp;\ncommit;\n",
                timeout=120)
        except CommandFailed as exc:
            raise ServiceFailed(f"could not make the Firebird server's security database: {exc.one_line()}",
                                "check the firebird3.0-server installation") from None
        log, pidfile = root / "server.log", root / "server.pid"
        group, box = hold_server(stack, ledger, cls.name, pidfile, "firebird", "SIGTERM")
        with open(log, "ab") as out:
            proc = subprocess.Popen([SERVER], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    env={**os.environ, **env}, start_new_session=True, cwd=root,
                                    preexec_fn=group.preexec())
        # its identity (pid and start time) into the ledger, then the pid file the freezer reads
        box[0] = ledger.update(box[0], child_pid=proc.pid)
        pidfile.write_text(f"{proc.pid}\n")
        waited = await_ready(lambda: listening(port), lambda: proc.poll() is not None, 60)
        if waited is Waited.EXITED:
            raise ServiceFailed(f"the Firebird server did not start: {log_tail(log)}",
                                "check the server settings of this workload")
        if waited is Waited.TIMED_OUT:
            raise ServiceFailed(f"the Firebird server did not listen within 60 s: {log_tail(log)}", "see its log")
        return Endpoint(service=cls.name, socket_dir=str(root), port=port, user="SYSDBA", database="",
                        env={"ISC_USER": "SYSDBA", "ISC_PASSWORD": password, "FIREBIRD_SERVER": f"127.0.0.1/{port}"},
                        log=str(log), version="Firebird 3.0 SuperClassic", pidfile=str(pidfile))


SERVICE = FirebirdServer
