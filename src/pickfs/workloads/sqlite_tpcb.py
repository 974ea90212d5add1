"""sqlite-tpcb: pgbench's TPC-B-like transaction in embedded SQLite."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from pickfs import databases
from pickfs.databases.sqlite import PAGE_SIZES
from pickfs.errors import PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services.base import Endpoint
from pickfs.units import parse_duration
from pickfs.workloads.base import Workload, json_doc
from pickfs.workloads.kinds import DATABASE_TRANSACTIONS
from pickfs.workloads.latency import (
    CPU_SHARE,
    LATENCY_METRICS,
    RATE_METRICS,
    FixedRate,
    latency_metrics,
    rate_args,
    rate_metrics,
    rate_notes,
)

JOURNAL_MODES = ("DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF")
SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
CLIENT = "pickfs.clients.tpcb"  # the one TPC-B client, over databases/sqlite.py
PROCESS_NAME = "pickfs-sqlite"  # what pickfs's monitors see the client as
CLIENT_NAMES = ("pickfs-tpcb", "pickfs-sqlite-tpcb")  # its output's name, and its own client's before it


class SqliteTpcb(FixedRate, Workload):
    kind = DATABASE_TRANSACTIONS
    name = "sqlite-tpcb"
    database = "sqlite"
    sliceable = True
    description = "pgbench's TPC-B-like transaction in embedded SQLite (Python sqlite3, one client)"
    metrics = (
        MetricDef("tps", "tx/s", True, "committed transactions per second"),
        *LATENCY_METRICS,
        MetricDef("transactions", "tx", True, "transactions committed in the run"),
        MetricDef("client_wchar", "B", False, "bytes the client passed to write()"),
        MetricDef("client_write_bytes", "B", False, "bytes the client caused to be written to storage"),
        *RATE_METRICS,
        CPU_SHARE,
    )
    defaults: ClassVar[dict[str, Any]] = {
        "scale": 1,
        "journal_mode": "WAL",
        "synchronous": "FULL",
        "page_size": 4096,  # SQLite's own default; set when the database is made
        "duration": 4.0,
        "transactions": 0,
    }

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        out["journal_mode"] = str(out["journal_mode"]).upper()
        out["synchronous"] = str(out["synchronous"]).upper()
        if out["journal_mode"] not in JOURNAL_MODES:
            raise PlanError(f"sqlite-tpcb journal_mode {settings['journal_mode']!r} is not valid",
                            f"use one of {', '.join(JOURNAL_MODES)}")
        if out["synchronous"] not in SYNCHRONOUS:
            raise PlanError(f"sqlite-tpcb synchronous {settings['synchronous']!r} is not valid",
                            f"use one of {', '.join(SYNCHRONOUS)}")
        size = str(out["page_size"]).strip()
        if not size.isdigit() or int(size) not in PAGE_SIZES:
            raise PlanError(f"sqlite-tpcb page_size {settings['page_size']!r} is not valid",
                            "use a power of two from 512 to 65536, e.g. page_size = 16384")
        out["page_size"] = int(size)
        out["duration"] = parse_duration(out["duration"])
        for key in ("scale", "transactions"):
            try:
                out[key] = int(out[key])
            except (TypeError, ValueError):
                raise PlanError(f"sqlite-tpcb {key} must be a whole number", f"e.g. {key} = 1") from None
        if out["scale"] < 1:
            raise PlanError("sqlite-tpcb scale must be at least 1", "e.g. scale = 1 (100,000 accounts)")
        if out["duration"] <= 0 and out["transactions"] <= 0:
            raise PlanError("sqlite-tpcb needs a duration or a transaction count", "e.g. --duration 20s")
        return out

    @classmethod
    def space_needed(cls, spec: WorkloadSpec) -> int | None:
        """About 20 MiB per scale step laid out, the WAL, and the history rows a run adds."""
        return int(spec.get("scale") * 64 * 1024**2 + 256 * 1024**2)

    @classmethod
    def scaled(cls, spec: WorkloadSpec, data_bytes: int) -> dict[str, Any] | None:
        return {**dict(spec.settings), "scale": max(1, round(data_bytes / (20 * 1024**2)))}

    def _argv(self, step: str, spec: WorkloadSpec, datadir: Path) -> list[str]:
        argv = [sys.executable, "-m", CLIENT, step, "--backend", "sqlite", "--process-name", PROCESS_NAME,
                "--scale", str(spec.get("scale")),
                *databases.get("sqlite").connection_args(datadir, None, dict(spec.settings), "tpcb")]
        if step == "run":
            argv += ["--duration", str(spec.get("duration")), "--transactions", str(spec.get("transactions")),
                     *rate_args(dict(spec.settings))]
        return argv

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        return run_program(self._argv("load", spec, datadir), timeout=3600)

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        return run_program(self._argv("run", spec, datadir), timeout=spec.get("duration") * 10 + 600)

    @staticmethod
    def notes_from(raw: str) -> list[str]:
        return rate_notes(json_doc(raw))

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("client") not in CLIENT_NAMES or doc.get("step") != "run":
            raise ValueError("not the output of a sqlite-tpcb run")
        if doc.get("errors"):  # one client: any error (a full disk, an I/O error) fails the run, as slow it is not
            raise ValueError(f"{doc['errors']} transactions failed: {'; '.join(doc.get('failures') or [])}"[:300])
        tx, elapsed = int(doc["transactions"]), float(doc["elapsed_s"])
        metrics = {"tps": tx / elapsed if elapsed > 0 else 0.0, "transactions": float(tx)}
        io = doc.get("io") or {}
        if "wchar" in io:
            metrics["client_wchar"] = float(io["wchar"])
            metrics["client_write_bytes"] = float(io["write_bytes"])
        metrics.update(latency_metrics(doc["latency_us"]))
        if "fixed_rate" in doc:  # at a fixed rate: latency from the schedule, and whether the client kept up
            metrics.update(rate_metrics(doc["fixed_rate"]))
            if elapsed > 0:
                metrics["client_cpu_share"] = float(doc["client_cpu_s"]) / elapsed
        return metrics
