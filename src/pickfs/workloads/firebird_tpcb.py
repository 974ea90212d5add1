"""firebird-tpcb: pgbench's TPC-B-like transaction on Firebird's embedded engine (field report R5)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pickfs.databases.firebird import firebird_unavailable
from pickfs.errors import PlanError
from pickfs.model import MetricDef, WorkloadSpec
from pickfs.units import parse_duration
from pickfs.workloads.latency import LATENCY_METRICS, RATE_METRICS, latency_metrics, rate_metrics
from pickfs.workloads.tpcc import Tpcc, on_off

CLIENT = "pickfs.clients.tpcb"  # the one TPC-B client, over databases/firebird.py


class FirebirdTpcb(Tpcc):
    name = "firebird-tpcb"
    description = "pgbench's TPC-B-like transaction on Firebird 3 (embedded engine, one client)"
    mix = "tpcb"
    client = CLIENT
    slice_seconds = 1.0
    clients_setting = None  # the embedded engine: one client
    supports_raw = True  # the database on the block device itself, as R5 scored raw = 100
    metrics = (
        MetricDef("tps", "tx/s", True, "committed transactions per second"),
        *LATENCY_METRICS,
        MetricDef("errors", "tx", False, "transactions that failed and were dropped"),
        MetricDef("client_cpu_share", "CPU", False, "CPU of the client process, the embedded engine included"),
        MetricDef("transactions", "tx", True, "transactions in the run"),
        MetricDef("forced_writes_in_force", "on", True, "1 when forced writes were on during the run"),
        *RATE_METRICS,
    )
    defaults: ClassVar[dict[str, Any]] = {"scale": 1, "duration": 10.0, "forced_writes": "on",
                                          "backend": "firebird", "clients": 1}

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        if out["backend"] != cls.defaults["backend"] or out["clients"] != 1:
            raise PlanError("firebird-tpcb runs on Firebird's embedded engine with one client",
                            "leave backend and clients out of its settings")
        cls.require_counts(out, "scale")
        out["duration"] = parse_duration(out["duration"])
        out["forced_writes"] = on_off(out["forced_writes"], "forced_writes")
        return out

    def _mix_args(self) -> list[str]:
        return ["--process-name", "pickfs-tpcc"]  # as the process was named when the TPC-C client ran the mix

    @staticmethod
    def _size_args(spec: WorkloadSpec) -> list[str]:
        """TPC-B's size: branches, as pgbench's scale."""
        return ["--scale", str(spec.get("scale"))]

    @classmethod
    def raw_ok(cls, spec: WorkloadSpec) -> bool:
        return True

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        return firebird_unavailable() or Tpcc.unavailable_reason(
            WorkloadSpec("tpcc", "tpcc", (("backend", "firebird"),)))

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        # the one TPC-B client's output, or (stored runs) the TPC-C client's tpcb mix before it
        if doc.get("client") not in ("pickfs-tpcb", "pickfs-tpcc") or doc.get("mix") != "tpcb" \
                or doc.get("step") != "run":
            raise ValueError("not the output of a firebird-tpcb run")
        elapsed = float(doc["elapsed_s"])
        t = doc["types"]["tpcb"]
        return {"tps": t["count"] / elapsed, "transactions": float(t["count"]), "errors": float(t["errors"]),
                "client_cpu_share": float(doc["client_cpu_s"]) / elapsed,
                "forced_writes_in_force": float(bool(doc.get("forced_writes"))), **latency_metrics(t["latency_us"]),
                **(rate_metrics(doc["fixed_rate"]) if "fixed_rate" in doc else {})}
