"""sysbench OLTP on a MariaDB/MySQL server pickfs started on the filesystem under test."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, ClassVar

from pickfs.errors import PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services.base import Endpoint
from pickfs.services.mariadb import MariaDB
from pickfs.stack.filesystems import which
from pickfs.stats import percentile_from_histogram
from pickfs.units import parse_duration
from pickfs.workloads.base import Workload
from pickfs.workloads.kinds import DATABASE_TRANSACTIONS
from pickfs.workloads.latency import RATE_METRICS, FixedRate, rate_metrics

TESTS = ("oltp_read_only", "oltp_read_write", "oltp_write_only")


ROW_BYTES = 250  # an sbtest row in InnoDB with its secondary index


class SysbenchOltp(FixedRate, Workload):
    kind = DATABASE_TRANSACTIONS
    name = "sysbench-oltp"
    description = "sysbench OLTP (read-only, read-write, write-only) on a private MariaDB/MySQL server"
    service = "mariadb"
    sliceable = True
    slice_seconds = 2.0  # sysbench --time counts whole seconds
    database = "mariadb"
    metrics = (
        MetricDef("tps", "tx/s", True, "transactions per second"),
        MetricDef("qps", "q/s", True, "queries per second"),
        MetricDef("lat_p50", "s", False, "median latency (from sysbench's histogram)"),
        MetricDef("lat_p95", "s", False, "95th percentile latency"),
        MetricDef("lat_p99", "s", False, "99th percentile latency"),
        MetricDef("lat_max", "s", False, "slowest transaction"),
        MetricDef("lat_avg", "s", False, "average latency"),
        MetricDef("transactions", "tx", True, "transactions in the run"),
        MetricDef("errors", "err", False, "ignored errors"),
        *RATE_METRICS,
    )
    clients_setting = "threads"
    defaults: ClassVar[dict[str, Any]] = {
        "test": "oltp_read_write",
        "tables": 4,
        "table_size": 10_000,
        "threads": 4,
        "duration": 10.0,
        # server settings; None keeps the server's own default (the run records what was in force)
        "innodb_buffer_pool_size": "128M",
        "innodb_flush_log_at_trx_commit": 1,
        "innodb_flush_method": None,
        "sync_binlog": None,
        "innodb_doublewrite": None,
        "log_bin": None,
    }

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        if out["test"] not in TESTS:
            raise PlanError(f"sysbench-oltp test {out['test']!r} is not valid", f"use one of {', '.join(TESTS)}")
        out["duration"] = parse_duration(out["duration"])
        cls.require_counts(out, "tables", "table_size", "threads")
        return out

    @classmethod
    def normalize(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = super().normalize(settings)
        if out.get("arrivals", "poisson") != "poisson" or out.get("latency_limit"):
            raise PlanError("sysbench --rate schedules Poisson arrivals and has no latency limit",
                            "leave arrivals and latency_limit out for sysbench-oltp")
        return out

    @classmethod
    def space_needed(cls, spec: WorkloadSpec) -> int | None:
        """The tables in InnoDB (about 250 bytes a row with its index) and the redo log and system files."""
        return int(spec.get("tables") * spec.get("table_size") * ROW_BYTES + 512 * 1024**2)

    @classmethod
    def scaled(cls, spec: WorkloadSpec, data_bytes: int) -> dict[str, Any] | None:
        return {**dict(spec.settings), "table_size": max(1000, data_bytes // (spec.get("tables") * ROW_BYTES))}

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        if which("sysbench") is None:
            return "sysbench is not installed (apt-get install sysbench)"
        return MariaDB.unavailable_reason()

    @staticmethod
    def _argv(spec: WorkloadSpec, endpoint: Endpoint | None) -> list[str]:
        assert endpoint is not None, "sysbench-oltp needs its MariaDB server"
        return ["sysbench", spec.get("test"), "--db-driver=mysql", f"--mysql-socket={endpoint.env['MYSQL_UNIX_PORT']}",
                f"--mysql-user={endpoint.user}", f"--mysql-db={endpoint.database}", f"--tables={spec.get('tables')}",
                f"--table-size={spec.get('table_size')}"]

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        t0 = time.perf_counter()
        out = run_program([*self._argv(spec, endpoint), f"--threads={min(spec.get('tables'), 4)}", "prepare"],
                          package="sysbench", timeout=3600)
        return RawOutput(out.text, time.perf_counter() - t0)

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        argv = [*self._argv(spec, endpoint), f"--threads={spec.get('threads')}",
                f"--time={max(1, round(spec.get('duration')))}", "--report-interval=1", "--histogram=on",
                "--percentile=99", *([f"--rate={spec.get('rate'):g}"] if spec.get("rate") else []), "run"]
        t0 = time.perf_counter()
        out = run_program(argv, package="sysbench", timeout=spec.get("duration") * 5 + 300)
        doc: dict[str, Any] = {"client": "sysbench", "argv": argv, "stdout": out.text,
                               "per_second": per_second(out.text), "server": endpoint.version if endpoint else ""}
        if spec.get("rate"):
            doc["fixed_rate"] = fixed_rate_block(out.text, float(spec.get("rate")), max(1, round(spec.get("duration"))))
        return RawOutput(json.dumps(doc), time.perf_counter() - t0)

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("client") != "sysbench":
            raise ValueError("not the output of a pickfs sysbench run")
        out = parse_output(doc["stdout"])
        if "fixed_rate" in doc:
            out.update(rate_metrics(doc["fixed_rate"]))
        return out


def fixed_rate_block(text: str, rate: float, window_s: float) -> dict[str, Any]:
    """sysbench --rate's output as the fixed-rate block pickfs's own clients write (pure). sysbench queues
    events at Poisson times and counts each one's time in its queue in its latency (from the scheduled
    start); it reports no per-event lag, so nothing is counted late, and it drops what is still queued at
    --time: the shortfall against rate x window is counted unfinished."""
    m = re.search(r"^\s*transactions:\s+(\d+)", text, re.M)
    done = int(m.group(1)) if m else 0
    hist: dict[int, int] = {}
    for seconds, count in histogram(text).items():
        key = int(round(seconds * 1e6))
        hist[key] = hist.get(key, 0) + count
    due = max(done, round(rate * window_s))
    return {"offered": rate, "arrivals": "poisson", "limit_s": 0.0, "window_s": window_s,
            "backlog": "sysbench drops its queue at --time: the shortfall against rate x window counted unfinished",
            "due": due, "done": done, "skipped": 0, "unfinished": due - done, "failed": 0,
            "latency_us": {str(k): v for k, v in sorted(hist.items())}, "lag_us": {}, "service_us": {}, "wake_us": {}}


def parse_output(text: str) -> dict[str, float]:
    """sysbench 1.0's run output -> metrics (pure)."""
    out: dict[str, float] = {}
    m = re.search(r"^\s*transactions:\s+(\d+)\s+\(([\d.]+) per sec\.\)", text, re.M)
    if not m:
        raise ValueError("sysbench printed no transaction count")
    out["transactions"], out["tps"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"^\s*queries:\s+\d+\s+\(([\d.]+) per sec\.\)", text, re.M)
    if m:
        out["qps"] = float(m.group(1))
    m = re.search(r"^\s*ignored errors:\s+(\d+)", text, re.M)
    if m:
        out["errors"] = float(m.group(1))
    m = re.search(r"^\s*avg:\s+([\d.]+)", text, re.M)
    if m:
        out["lat_avg"] = float(m.group(1)) / 1000
    hist = histogram(text)
    if hist:
        for q, name in ((50, "lat_p50"), (95, "lat_p95"), (99, "lat_p99"), (100, "lat_max")):
            out[name] = percentile_from_histogram(hist, q)
    else:
        m = re.search(r"^\s*max:\s+([\d.]+)", text, re.M)
        if m:
            out["lat_max"] = float(m.group(1)) / 1000
    return out


def histogram(text: str) -> dict[float, int]:
    """sysbench's latency histogram (milliseconds) -> {seconds: count}."""
    hist: dict[float, int] = {}
    for m in re.finditer(r"^\s*([\d.]+)\s+\|\**\s+(\d+)\s*$", text, re.M):
        hist[float(m.group(1)) / 1000] = hist.get(float(m.group(1)) / 1000, 0) + int(m.group(2))
    return hist


def per_second(text: str) -> list[float]:
    """The tps of each '[ Ns ] thds: .. tps: ..' progress line."""
    return [float(m.group(1)) for m in re.finditer(r"^\[ *\d+s \] thds: \d+ tps: ([\d.]+)", text, re.M)]
