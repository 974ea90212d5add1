"""tpcc: a TPC-C-style mix over PostgreSQL, MariaDB, SQLite (and Firebird), one client written once."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from pickfs import databases
from pickfs.errors import PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services.base import Endpoint
from pickfs.units import parse_duration
from pickfs.workloads.base import Workload, json_doc
from pickfs.workloads.kinds import DATABASE_TRANSACTIONS
from pickfs.workloads.latency import RATE_METRICS, FixedRate, latency_metrics, rate_args, rate_metrics, rate_notes

CLIENT = "pickfs.clients.tpcc"
BACKENDS = databases.names()  # sqlite, postgresql, mariadb, firebird (embedded), firebird-server (R5's SuperClassic)
DB_STEM = "pickfs"  # the embedded databases' file name, .db (SQLite) or .fdb (Firebird)
TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")


def on_off(value: Any, key: str) -> str:
    """A switch given as on/off or true/false, as 'on' or 'off'."""
    text = {True: "on", False: "off"}.get(value, str(value).lower())
    if text not in ("on", "off"):
        raise PlanError(f"{key} must be on or off", f'e.g. {key} = "off"')
    return text


class Tpcc(FixedRate, Workload):
    kind = DATABASE_TRANSACTIONS
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
        *RATE_METRICS,
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
        if databases.get(out["backend"]).one_client and out["clients"] != 1:
            raise PlanError("Firebird's embedded engine takes one client per process",
                            "set clients = 1 for the firebird backend, or backend = \"firebird-server\" for several")
        out["synchronous"] = str(out["synchronous"]).upper()
        out["journal_mode"] = str(out["journal_mode"]).upper()
        return out

    @classmethod
    def database_for(cls, spec: WorkloadSpec) -> str | None:
        return databases.get(spec.get("backend")).database

    @classmethod
    def raw_ok(cls, spec: WorkloadSpec) -> bool:
        """Firebird keeps a database on a block device as well as in a file: R5's raw baseline."""
        return databases.get(spec.get("backend")).raw_ok

    @classmethod
    def service_for(cls, spec: WorkloadSpec) -> str | None:
        return databases.get(spec.get("backend")).service

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        return databases.get(spec.get("backend") if spec else cls.defaults["backend"]).unavailable_reason()

    mix = "tpcc"
    client = CLIENT

    @staticmethod
    def _size_args(spec: WorkloadSpec) -> list[str]:
        """The client's data-size arguments for this mix."""
        return ["--warehouses", str(spec.get("warehouses", 1)), "--scale-down", str(spec.get("scale_down"))]

    def _mix_args(self) -> list[str]:
        """The client's arguments for this mix."""
        return ["--mix", self.mix]

    def _argv(self, step: str, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None) -> list[str]:
        db = databases.get(spec.get("backend"))
        argv = [sys.executable, "-m", self.client, step, *self._mix_args(),
                "--backend", db.database,  # the client drives firebird-server as firebird, over the loopback
                *self._size_args(spec),
                *db.connection_args(datadir, endpoint, dict(spec.settings), DB_STEM)]
        if step == "run":
            argv += ["--clients", str(spec.get("clients")), "--duration", str(spec.get("duration")),
                     *rate_args(dict(spec.settings))]
        return argv

    def _env(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> dict[str, str] | None:
        return databases.get(spec.get("backend")).client_env(datadir, self.scratch, endpoint)

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        env = self._env(spec, datadir, endpoint)
        out = run_program(self._argv("load", spec, datadir, endpoint), timeout=3600, env=env)
        databases.get(spec.get("backend")).after_load(datadir, endpoint, env, dict(spec.settings), DB_STEM)
        return out

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        return run_program(self._argv("run", spec, datadir, endpoint), timeout=spec.get("duration") * 5 + 300,
                           env=self._env(spec, datadir, endpoint))

    @staticmethod
    def notes_from(raw: str) -> list[str]:
        return rate_notes(json_doc(raw))

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
        if "fixed_rate" in doc:  # at a fixed rate: every transaction type's latency from the schedule
            m.update(rate_metrics(doc["fixed_rate"]))
        return m
