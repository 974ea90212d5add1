"""tpcc: a TPC-C-style mix over PostgreSQL, MariaDB, SQLite (and Firebird), one client written once."""

from __future__ import annotations

import glob
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from pickfs.errors import PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services.base import Endpoint
from pickfs.stack.filesystems import which
from pickfs.stack.workdir import PRIVATE_MODE
from pickfs.units import parse_duration
from pickfs.workloads.base import Workload
from pickfs.workloads.fio import is_block_device
from pickfs.workloads.latency import latency_metrics

CLIENT = "pickfs.clients.tpcc"
# backend -> the server pickfs starts for it (None: embedded in the client); firebird-server: R5's SuperClassic
BACKENDS = {"sqlite": None, "postgresql": "postgresql", "mariadb": "mariadb", "firebird": None,
            "firebird-server": "firebird"}
DRIVERS = {"postgresql": ("psycopg", "psycopg[binary]"), "mariadb": ("pymysql", "PyMySQL"),
           "firebird": ("firebird.driver", "firebird-driver"), "firebird-server": ("firebird.driver", "firebird-driver")}
FIREBIRDS = ("firebird", "firebird-server")
FIREBIRD_ROOT = "/usr/lib/x86_64-linux-gnu/firebird/3.0"  # Debian's firebird3.0-server-core


def fbclient() -> str | None:
    found = sorted(glob.glob("/usr/lib/*/libfbclient.so.2")) or sorted(glob.glob("/usr/lib/libfbclient.so.2"))
    return found[0] if found else None


def firebird_unavailable() -> str | None:
    if fbclient() is None:
        return "Firebird's client library is missing (apt-get install libfbclient2)"
    if not glob.glob(f"{FIREBIRD_ROOT}/plugins/libEngine12.so"):
        return "Firebird's embedded engine is missing (apt-get install firebird3.0-server-core)"
    if which("gfix") is None:
        return "gfix is missing (apt-get install firebird3.0-utils)"
    return None


DB_STEM = "pickfs"  # the embedded databases' file name, .db (SQLite) or .fdb (Firebird)


def connection_args(backend: str, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
                    stem: str) -> list[str]:
    """How a client of clients/ reaches the database: its file for the embedded ones, else the server's socket."""
    if backend == "firebird":  # a database on a block device is the device itself (R5's raw baseline)
        db = datadir if is_block_device(datadir) else datadir / f"{stem}.fdb"
        return ["--db", str(db), "--fb-client", fbclient() or "libfbclient.so.2"]
    if backend == "firebird-server":  # the private server, over the loopback; the password in the environment
        assert endpoint is not None, "firebird-server needs its server started"
        db = datadir if is_block_device(datadir) else datadir / f"{stem}.fdb"
        return ["--db", f"{endpoint.env['FIREBIRD_SERVER']}:{db}", "--fb-client", fbclient() or "libfbclient.so.2"]
    if backend == "sqlite":
        return ["--db", str(datadir / f"{stem}.db"), "--journal-mode", str(settings.get("journal_mode", "WAL")),
                "--synchronous", str(settings.get("synchronous", "FULL"))]
    assert endpoint is not None, f"{backend} needs its server started"
    if backend == "postgresql":
        return ["--host", endpoint.socket_dir, "--port", str(endpoint.port), "--user", endpoint.user,
                "--database", endpoint.database]
    return ["--socket", endpoint.env["MYSQL_UNIX_PORT"], "--user", endpoint.user, "--database", endpoint.database]


def set_forced_writes(db: Path | str, on: bool, env: dict[str, str]) -> None:
    """Firebird's durability switch, set on the database file (gfix -write sync|async)."""
    run_program(["gfix", "-write", "sync" if on else "async", str(db)], package="firebird3.0-utils", env=env)


def firebird_env(datadir: Path, scratch: Path | None = None) -> dict[str, str]:
    """The embedded engine, with its lock files private to this run: beside the database, or for a
    database on a block device, in the configuration's scratch directory."""
    if is_block_device(datadir):
        if scratch is None:
            raise ValueError("a Firebird database on a block device needs a directory for its lock files")
        lock = scratch / "fblock"
    else:
        lock = datadir / "fblock"
    lock.mkdir(mode=PRIVATE_MODE, exist_ok=True)
    return {"FIREBIRD": FIREBIRD_ROOT, "FIREBIRD_LOCK": str(lock), "FIREBIRD_TMP": str(lock)}


def firebird_db(datadir: Path) -> Path:
    """The database: a file in the data directory, or the block device itself."""
    return datadir if is_block_device(datadir) else datadir / f"{DB_STEM}.fdb"
TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")


def on_off(value: Any, key: str) -> str:
    """A switch given as on/off or true/false, as 'on' or 'off'."""
    text = {True: "on", False: "off"}.get(value, str(value).lower())
    if text not in ("on", "off"):
        raise PlanError(f"{key} must be on or off", f'e.g. {key} = "off"')
    return text


class Tpcc(Workload):
    sliceable = True
    slice_seconds = 2.0
    name = "tpcc"
    description = "TPC-C-style mix (45/43/4/4/4) over each database's Python driver, data scaled down"
    metrics = (
        MetricDef("notpm", "NO/min", True, "New-Order transactions per minute"),
        MetricDef("tpm_total", "tx/min", True, "all transactions per minute"),
        MetricDef("lat_p50", "s", False, "New-Order median latency"),
        MetricDef("lat_p95", "s", False, "New-Order 95th percentile latency"),
        MetricDef("lat_p99", "s", False, "New-Order 99th percentile latency"),
        MetricDef("lat_max", "s", False, "slowest New-Order"),
        *(MetricDef(f"lat_p99_{t}", "s", False, f"{t.replace('_', '-')} 99th percentile latency") for t in TYPES[1:]),
        MetricDef("errors", "tx", False, "transactions that failed (deadlocks, serialisation) and were dropped"),
        MetricDef("client_cpu_share", "CPU", False, "CPU the client itself used, in CPUs: near 1 per client "
                                                    "thread means the client, not the disk, set the pace"),
        MetricDef("transactions", "tx", True, "transactions in the run"),
        MetricDef("client_wchar", "B", False, "bytes the client passed to write()"),
        MetricDef("forced_writes_in_force", "on", True, "Firebird: 1 when forced writes were on during the run"),
    )
    clients_setting: ClassVar[str | None] = "clients"  # None in firebird-tpcb (one client)
    defaults: ClassVar[dict[str, Any]] = {
        "backend": "sqlite",
        "warehouses": 1,
        "scale_down": 10,
        "clients": 2,
        "duration": 10.0,
        "journal_mode": "WAL",  # sqlite
        "synchronous": "FULL",  # sqlite
        "forced_writes": "on",  # firebird
        # PostgreSQL and MariaDB server settings; None keeps the server's default
        "shared_buffers": None, "fsync": None, "synchronous_commit": None, "full_page_writes": None,
        "wal_sync_method": None, "innodb_buffer_pool_size": None, "innodb_flush_log_at_trx_commit": None,
        "innodb_flush_method": None, "innodb_doublewrite": None,
    }

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        if out["backend"] not in BACKENDS:
            raise PlanError(f"tpcc backend {out['backend']!r} is not valid", f"use one of {', '.join(BACKENDS)}")
        out["duration"] = parse_duration(out["duration"])
        cls.require_counts(out, "warehouses", "scale_down", "clients")
        out["forced_writes"] = on_off(out["forced_writes"], "forced_writes")
        if out["backend"] == "firebird" and out["clients"] != 1:
            raise PlanError("Firebird's embedded engine takes one client per process",
                            "set clients = 1 for the firebird backend, or backend = \"firebird-server\" for several")
        out["synchronous"] = str(out["synchronous"]).upper()
        out["journal_mode"] = str(out["journal_mode"]).upper()
        return out

    @classmethod
    def database_for(cls, spec: WorkloadSpec) -> str | None:
        return "firebird" if spec.get("backend") in FIREBIRDS else spec.get("backend")

    @classmethod
    def raw_ok(cls, spec: WorkloadSpec) -> bool:
        """Firebird keeps a database on a block device as well as in a file: R5's raw baseline."""
        return spec.get("backend") in FIREBIRDS

    @classmethod
    def service_for(cls, spec: WorkloadSpec) -> str | None:
        return BACKENDS[spec.get("backend")]

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        backend = spec.get("backend") if spec else cls.defaults["backend"]
        if backend in FIREBIRDS and firebird_unavailable():
            return firebird_unavailable()
        if backend in DRIVERS and importlib.util.find_spec(DRIVERS[backend][0].split(".")[0]) is None:
            return f"the Python driver {DRIVERS[backend][1]} is missing (pip install {DRIVERS[backend][1]})"
        service = BACKENDS[backend]
        if service:
            from pickfs.services import service_class

            return service_class(service).unavailable_reason()
        return None

    mix = "tpcc"

    @staticmethod
    def _size_args(spec: WorkloadSpec) -> list[str]:
        """The client's data-size arguments for this mix."""
        return ["--warehouses", str(spec.get("warehouses", 1)), "--scale-down", str(spec.get("scale_down"))]

    def _argv(self, step: str, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None) -> list[str]:
        backend = spec.get("backend")
        argv = [sys.executable, "-m", CLIENT, step, "--mix", self.mix,
                "--backend", "firebird" if backend in FIREBIRDS else backend,
                *self._size_args(spec),
                *connection_args(backend, datadir, endpoint, dict(spec.settings), DB_STEM)]
        if step == "run":
            argv += ["--clients", str(spec.get("clients")), "--duration", str(spec.get("duration"))]
        return argv

    def _env(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> dict[str, str] | None:
        if spec.get("backend") == "firebird-server" and endpoint is not None:
            return {k: endpoint.env[k] for k in ("ISC_USER", "ISC_PASSWORD")}
        return firebird_env(datadir, self.scratch) if spec.get("backend") == "firebird" else None

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        env = self._env(spec, datadir, endpoint)
        out = run_program(self._argv("load", spec, datadir, endpoint), timeout=3600, env=env)
        if spec.get("backend") == "firebird":
            set_forced_writes(firebird_db(datadir), spec.get("forced_writes") == "on", env or {})
        elif spec.get("backend") == "firebird-server" and endpoint is not None:
            set_forced_writes(f"{endpoint.env['FIREBIRD_SERVER']}:{firebird_db(datadir)}",
                              spec.get("forced_writes") == "on", env or {})
        return out

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        return run_program(self._argv("run", spec, datadir, endpoint), timeout=spec.get("duration") * 5 + 300,
                           env=self._env(spec, datadir, endpoint))

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("client") != "pickfs-tpcc" or doc.get("step") != "run":
            raise ValueError("not the output of a tpcc run")
        elapsed = float(doc["elapsed_s"])
        types = doc["types"]
        minutes = elapsed / 60
        total = sum(t["count"] for t in types.values())
        m = {"notpm": types["new_order"]["count"] / minutes, "tpm_total": total / minutes,
             "transactions": float(total), "errors": float(sum(t["errors"] for t in types.values())),
             "client_cpu_share": float(doc["client_cpu_s"]) / elapsed}
        m.update(latency_metrics(types["new_order"]["latency_us"]))
        for t in TYPES[1:]:
            p99 = latency_metrics(types[t]["latency_us"]).get("lat_p99")
            if p99 is not None:
                m[f"lat_p99_{t}"] = p99
        if "wchar" in (doc.get("io") or {}):
            m["client_wchar"] = float(doc["io"]["wchar"])
        if doc.get("forced_writes") is not None:
            m["forced_writes_in_force"] = float(doc["forced_writes"])
        return m
