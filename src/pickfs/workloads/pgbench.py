"""pgbench against a PostgreSQL server pickfs started on the filesystem under test."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from pickfs.clients.histogram import add
from pickfs.clients.pacing import LATE_AFTER_S, Book, summary
from pickfs.errors import PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services.base import Endpoint
from pickfs.services.postgresql import SETTINGS, PostgreSQL, bindir
from pickfs.stack.cleanup import holding
from pickfs.stack.ledger import Ledger
from pickfs.units import parse_duration
from pickfs.workloads.base import Workload
from pickfs.workloads.kinds import DATABASE_TRANSACTIONS
from pickfs.workloads.latency import LATENCY_METRICS, RATE_METRICS, FixedRate, latency_metrics, rate_metrics

MODES = {"tpcb-like": "tpcb-like", "select-only": "select-only", "simple-update": "simple-update"}


def _tool(name: str) -> str:
    b = bindir()
    return str(b / name) if b and (b / name).exists() else name


@contextmanager
def log_directory(ledger: Ledger) -> Iterator[Path]:
    """A private directory for pgbench's per-transaction log, written to the ledger before it exists.

    In memory when it can be: on /tmp it would compete for the same physical disk as the filesystem
    under test. Removed on exit, and by `pickfs cleanup` after a kill -9.
    """
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    path = base / f"pickfs-pgbench-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    with holding(ledger, "dir", path=str(path), recursive=True):
        path.mkdir(mode=0o700)
        yield path


def fold_logs(paths: list[Path]) -> tuple[dict[str, int], list[int], int]:
    """pgbench per-transaction logs -> (latency histogram in us, transactions per second, failures).

    A line: client_id transaction_no time_us script_no time_epoch time_us [schedule_lag] [retries];
    time_us is 'failed' (or 'skipped') for a transaction that did not complete.
    """
    hist: dict[int, int] = {}
    per_second: dict[int, int] = {}
    failed = 0
    for path in paths:
        for line in path.read_text().splitlines():
            f = line.split()
            if len(f) < 6:
                continue
            if f[2] == "skipped":  # at a fixed rate, past --latency-limit: counted in the fixed-rate block
                continue
            if not f[2].isdigit():
                failed += 1
                continue
            add(hist, int(f[2]))
            second = int(f[4])
            per_second[second] = per_second.get(second, 0) + 1
    series = [per_second.get(s, 0) for s in range(min(per_second), max(per_second) + 1)] if per_second else []
    return {str(k): v for k, v in sorted(hist.items())}, series, failed


def fold_rate_logs(paths: list[Path], rate: float, limit_s: float, window_s: float) -> dict[str, Any]:
    """pgbench's full per-transaction logs of a fixed-rate run (-R) -> the fixed-rate block pickfs's own
    clients write (clients/pacing.py). With -R, pgbench logs each transaction's latency from its
    scheduled start and its schedule lag (start minus scheduled start); 'skipped' marks one past
    --latency-limit. pgbench ends at -T without running what is still waiting: the shortfall against
    the transactions due (rate x window, the Poisson count's mean) is counted as unfinished."""
    book = Book()
    for path in paths:
        for line in path.read_text().splitlines():
            f = line.split()
            if len(f) < 7:
                continue
            if f[2] == "skipped":
                book.skipped += 1
            elif not f[2].isdigit():
                book.failed += 1
            else:
                latency, lag = int(f[2]), int(f[6])
                book.done += 1
                add(book.from_schedule, latency)
                add(book.lag, lag)
                add(book.service, max(0, latency - lag))
                if lag > LATE_AFTER_S * 1e6:
                    book.late += 1
    seen = book.done + book.skipped + book.failed
    book.unfinished = max(0, round(rate * window_s) - seen)
    book.due = seen + book.unfinished
    return summary(book, rate, "poisson", limit_s, window_s) | {
        "backlog": "pgbench stops at -T: the shortfall against rate x window counted unfinished"}


SCALE_STEP_BYTES = 15 * 1024**2  # pgbench_accounts' 100,000 rows and their index, per scale step


class Pgbench(FixedRate, Workload):
    kind = DATABASE_TRANSACTIONS
    name = "pgbench"
    description = "pgbench (TPC-B-like, select-only or simple-update) on a private PostgreSQL server"
    service = "postgresql"
    sliceable = True
    slice_seconds = 2.0  # pgbench -T counts whole seconds
    database = "postgresql"
    metrics = (
        MetricDef("tps", "tx/s", True, "transactions per second (without initial connection time)"),
        *LATENCY_METRICS,
        MetricDef("lat_avg", "s", False, "average latency reported by pgbench"),
        MetricDef("lat_stddev", "s", False, "latency standard deviation reported by pgbench"),
        MetricDef("transactions", "tx", True, "transactions processed"),
        MetricDef("failed", "tx", False, "transactions that failed"),
        *RATE_METRICS,
    )
    clients_setting = "clients"
    defaults: ClassVar[dict[str, Any]] = {
        "mode": "tpcb-like",
        "scale": 10,
        "clients": 4,
        "threads": 2,
        "duration": 10.0,
        "log_sampling": 0.1,  # share of transactions written to the per-transaction log
        # server settings: PostgreSQL's own defaults, stated
        "shared_buffers": "128MB",
        "checkpoint_timeout": "5min",
        "max_wal_size": "1GB",
        "fsync": "on",
        "synchronous_commit": "on",
        "wal_sync_method": "fdatasync",
        "full_page_writes": "on",
        "data_sync_retry": "off",
    }

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        if out["mode"] not in MODES:
            raise PlanError(f"pgbench mode {out['mode']!r} is not valid", f"use one of {', '.join(MODES)}")
        cls.require_counts(out, "scale", "clients", "threads")
        if out["threads"] > out["clients"]:
            raise PlanError("pgbench threads cannot exceed clients", "e.g. clients = 4, threads = 2")
        out["duration"] = parse_duration(out["duration"])
        try:
            out["log_sampling"] = float(out["log_sampling"])
        except (TypeError, ValueError):
            raise PlanError("pgbench log_sampling must be a number within (0, 1]", "e.g. log_sampling = 0.1") from None
        if not 0 < out["log_sampling"] <= 1:
            raise PlanError("pgbench log_sampling must be within (0, 1]", "e.g. log_sampling = 0.1")
        for key in SETTINGS:
            out[key] = str(out[key])
        return out

    @classmethod
    def normalize(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = super().normalize(settings)
        if out.get("arrivals", "poisson") != "poisson":
            raise PlanError("pgbench --rate schedules Poisson arrivals only", "leave arrivals out for pgbench")
        return out

    @classmethod
    def space_needed(cls, spec: WorkloadSpec) -> int | None:
        """Tables and indexes (about 15 MiB per scale step, half again as they churn), and some WAL."""
        return int(spec.get("scale") * SCALE_STEP_BYTES * 3 // 2 + 320 * 1024**2)

    @classmethod
    def scaled(cls, spec: WorkloadSpec, data_bytes: int) -> dict[str, Any] | None:
        return {**dict(spec.settings), "scale": max(1, round(data_bytes / SCALE_STEP_BYTES))}

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        return PostgreSQL.unavailable_reason()

    @staticmethod
    def _server(endpoint: Endpoint | None) -> Endpoint:
        assert endpoint is not None, "pgbench needs its PostgreSQL server"
        return endpoint

    @staticmethod
    def _conn(endpoint: Endpoint) -> list[str]:
        return ["-h", endpoint.socket_dir, "-p", str(endpoint.port), "-U", endpoint.user]

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        server = self._server(endpoint)
        t0 = time.perf_counter()
        out = run_program([_tool("pgbench"), "-i", "-q", "-s", str(spec.get("scale")), *self._conn(server),
                           server.database], package="postgresql-client", timeout=3600)
        # The load's own checkpoint must not land in the first measured run.
        run_program([_tool("psql"), *self._conn(server), "-d", server.database, "-c", "CHECKPOINT"],
                    package="postgresql-client")
        return RawOutput(out.text, time.perf_counter() - t0)

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        server = self._server(endpoint)
        # The ledger of the work directory whose data/ cache this workload was given.
        with log_directory(Ledger(self.cache.parent / "ledger")) as logdir:
            prefix = logdir / "pgbench_log"
            rate = float(spec.get("rate") or 0.0)
            sampling = 1.0 if rate else spec.get("log_sampling")  # at a fixed rate every transaction is logged
            seconds = max(1, round(spec.get("duration")))
            argv = [_tool("pgbench"), "-b", MODES[spec.get("mode")], "-c", str(spec.get("clients")),
                    "-j", str(spec.get("threads")), "-T", str(seconds), "-P", "1",
                    "-l", f"--log-prefix={prefix}", f"--sampling-rate={sampling}", *pgbench_rate_args(spec),
                    *self._conn(server), server.database]
            t0 = time.perf_counter()
            out = run_program(argv, package="postgresql-client", timeout=spec.get("duration") * 5 + 300)
            elapsed = time.perf_counter() - t0
            logs = sorted(logdir.glob("pgbench_log*"))
            hist, sampled, failed = fold_logs(logs)
            fixed = fold_rate_logs(logs, rate, float(spec.get("latency_limit") or 0.0), seconds) if rate else None
        if fixed:  # pgbench logs latency from the schedule at -R: lat_p* stay the service time, as elsewhere
            hist = fixed["service_us"]
        doc = {"client": "pgbench", "argv": argv, "stdout": out.text, "latency_us": hist, "log_sampling": sampling,
               "per_second": [round(n / sampling) for n in sampled], "failed": failed, "server": server.version,
               **({"fixed_rate": fixed} if fixed else {})}
        return RawOutput(json.dumps(doc), elapsed)

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("client") != "pgbench":
            raise ValueError("not the output of a pickfs pgbench run")
        summary = parse_summary(doc["stdout"])
        failed = summary.pop("failed", None)
        return {**summary, **latency_metrics(doc["latency_us"]),
                "failed": failed if failed is not None else float(doc.get("failed", 0)),
                **(rate_metrics(doc["fixed_rate"]) if "fixed_rate" in doc else {})}


def pgbench_rate_args(spec: WorkloadSpec) -> list[str]:
    """pgbench's own fixed-rate arguments: -R (Poisson arrivals, all clients together) and --latency-limit in ms."""
    rate = float(spec.get("rate") or 0.0)
    if not rate:
        return []
    limit = float(spec.get("latency_limit") or 0.0)
    return ["-R", f"{rate:g}", *([f"--latency-limit={limit * 1000:g}"] if limit > 0 else [])]


def parse_summary(stdout: str) -> dict[str, float]:
    """pgbench's closing summary -> tps, transactions, average and stddev latency (pure)."""
    out: dict[str, float] = {}
    m = re.search(r"^tps = ([\d.]+) \(without initial connection time\)", stdout, re.M) or \
        re.search(r"^tps = ([\d.]+) \(excluding connections establishing\)", stdout, re.M)
    if not m:
        raise ValueError("pgbench printed no tps line")
    out["tps"] = float(m.group(1))
    m = re.search(r"^number of transactions actually processed: (\d+)", stdout, re.M)
    if m:
        out["transactions"] = float(m.group(1))
    m = re.search(r"^number of failed transactions: (\d+)", stdout, re.M)
    if m:
        out["failed"] = float(m.group(1))  # counted by pgbench itself, not from the sampled log
    for key, name in (("latency average", "lat_avg"), ("latency stddev", "lat_stddev")):
        m = re.search(rf"^{key} = ([\d.]+) ms", stdout, re.M)
        if m:
            out[name] = float(m.group(1)) / 1000
    return out
