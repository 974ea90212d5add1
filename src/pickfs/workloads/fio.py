"""fio-driven workloads: fileio (sysbench-fileio style), fileio-first-touch and wal (pg_test_fsync style).

Each run hands fio a generated job file on stdin and keeps the job file with fio's JSON output,
so anyone can rerun exactly that job by hand. The parsers are pure functions of that record.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

from pickfs.databases.base import is_block_device
from pickfs.errors import CommandFailed, PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services.base import Endpoint
from pickfs.stack.filesystems import which
from pickfs.stack.ledger import Ledger
from pickfs.units import parse_duration, parse_size
from pickfs.workloads.base import Workload, json_doc
from pickfs.workloads.fio_rate import JobRate, split_rate
from pickfs.workloads.fio_rate import fixed_rate_block as fio_fixed_rate_block
from pickfs.workloads.kinds import RAW_IO
from pickfs.workloads.latency import CPU_SHARE, RATE_METRICS, FixedRate, rate_metrics
from pickfs.workloads.pgbench import log_directory

TOOL = "pickfs-fio"
FILE_PREFIX = "pickfs-fileio"
WAL_FILE = "pickfs-wal"

# The ways a database can make a log write durable (PostgreSQL's wal_sync_method and friends).
SYNC_METHODS: dict[str, dict[str, str]] = {
    "fdatasync": {"fdatasync": "1"},
    "fsync": {"fsync": "1"},
    "o_dsync": {"sync": "dsync"},
    "o_sync": {"sync": "sync"},
    "o_direct_dsync": {"direct": "1", "sync": "dsync"},
}
WAL_BLOCK_SIZES = (4096, 8192, 16384)


def job_text(sections: list[tuple[str, dict[str, Any]]]) -> str:
    """A fio job file from (section, options) pairs (pure)."""
    lines: list[str] = []
    for name, options in sections:
        lines.append(f"[{name}]")
        lines += [f"{k}={v}" for k, v in options.items() if v is not None]
        lines.append("")
    return "\n".join(lines)


def fio_json(text: str) -> dict[str, Any]:
    """fio's JSON document, skipping any note fio printed before it (pure)."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON in fio's output")
    doc: dict[str, Any] = json.loads(text[start:])
    return doc


def _percentile(section: dict[str, Any], key: str, q: str) -> float | None:
    """A percentile in seconds from a fio clat_ns/lat_ns section, if fio reported it."""
    pct = (section.get(key) or {}).get("percentile") or {}
    for k, v in pct.items():
        if abs(float(k) - float(q)) < 1e-9:
            return float(v) / 1e9
    return None


def sync_count(sync: dict[str, Any]) -> int:
    """fsync/fdatasync calls fio made; fio 3.33 leaves total_ios at 0 and counts them in lat_ns.N."""
    return int(sync.get("total_ios") or (sync.get("lat_ns") or {}).get("N") or 0)


def run_fio(job: str, timeout: float) -> str:
    return run_program(["fio", "--output-format=json", "-"], package="fio", input_text=job, timeout=timeout,
                       hint="see fio's message above; the job file is kept with the run").text


def fio_unavailable() -> str | None:
    return None if which("fio") else "fio is not installed (apt-get install fio)"


LAT_LOG = "lat"  # fio's per-I/O latency log at a fixed rate: lat_lat.1.log in a private directory
RATE_PROCESS = {"poisson": "poisson", "uniform": "linear"}


def fixed_rate_limits(name: str, out: dict[str, Any]) -> None:
    """What fio 3.x can pace and pickfs can measure from the schedule; raises PlanError naming the fix.
    fio paces each direction on its own schedule and, with fsync in the job, crashes (SIGFPE) or leaves
    its schedule; several jobs write one latency log between them; it cannot skip an I/O."""
    if out.get("latency_limit"):
        raise PlanError(f"{name} at a fixed rate cannot skip I/Os: fio has no latency limit",
                        f"leave {name}.latency_limit out")
    if out["read_share"] not in (0, 1):
        raise PlanError(f"{name} at a fixed rate runs reads or writes, not a mix (fio paces each on its own schedule)",
                        f"--set {name}.read_share=1 (reads) or {name}.read_share=0 (writes)")
    if out["fsync_every"]:
        raise PlanError(f"{name} at a fixed rate cannot sync every few writes (fio then leaves its schedule)",
                        f"--set {name}.fsync_every=0 (and {name}.direct=true for writes that reach the device)")
    if out["threads"] != 1:
        raise PlanError(f"{name} at a fixed rate runs one fio job", f"--set {name}.threads=1 (iodepth may be higher)")
    try:
        split_rate(float(out["rate"]), float(out["read_share"]), 1)
    except ValueError as exc:
        raise PlanError(f"{name} rate: {exc}", "e.g. --rate 500/s") from None


class Fileio(FixedRate, Workload):
    kind = RAW_IO
    sliceable = True
    name = "fileio"
    description = ("sysbench-fileio style random read/write over a set of fully written files (fio): "
                   "IOPS, MB/s, and read, write and sync latency apart")
    supports_raw = True
    metrics = (
        MetricDef("iops", "ops/s", True, "reads and writes per second"),
        MetricDef("read_iops", "ops/s", True, "reads per second"),
        MetricDef("write_iops", "ops/s", True, "writes per second"),
        MetricDef("read_MBps", "MB/s", True, "MB read per second"),
        MetricDef("write_MBps", "MB/s", True, "MB written per second"),
        MetricDef("syncs_per_s", "syncs/s", True, "fsync/fdatasync calls per second"),
        MetricDef("read_p50", "s", False, "median read latency"),
        MetricDef("read_p99", "s", False, "99th percentile read latency"),
        MetricDef("write_p50", "s", False, "median write latency"),
        MetricDef("write_p99", "s", False, "99th percentile write latency"),
        MetricDef("sync_p50", "s", False, "median fsync/fdatasync latency"),
        MetricDef("sync_p99", "s", False, "99th percentile fsync/fdatasync latency"),
        MetricDef("sync_max", "s", False, "slowest fsync/fdatasync"),
        *RATE_METRICS,
        CPU_SHARE,
    )
    breakdown = ("read_iops", "write_iops", "read_MBps", "write_MBps", "read_p99", "write_p99", "sync_p99")
    defaults: ClassVar[dict[str, Any]] = {
        "size": "1G",  # total over all files
        "files": 16,
        "block_size": "16K",
        "read_share": 0.6,  # sysbench rndrw's 1.5 reads per write
        "fsync_every": 100,  # writes between syncs; 0 for none
        "sync": "fsync",  # or fdatasync
        "pattern": "random",  # or sequential
        "direct": False,
        "iodepth": 1,
        "threads": 1,
        "duration": 10.0,
        # false: fio drops the files' page cache before each run (cold reads); true: the cache stays as the
        # workload left it, as a database's does, so memory (--memory) decides what reads reach the device
        "keep_cache": False,
    }

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        out["size"] = parse_size(out["size"])
        out["block_size"] = parse_size(out["block_size"])
        out["duration"] = parse_duration(out["duration"])
        cls.require_counts(out, "files", "iodepth", "threads")
        if not isinstance(out["fsync_every"], int) or out["fsync_every"] < 0:
            raise PlanError(f"{cls.name} fsync_every must be a whole number (0 for no syncs)", "e.g. fsync_every = 100")
        try:
            out["read_share"] = float(out["read_share"])
        except (TypeError, ValueError):
            raise PlanError(f"{cls.name} read_share must be a number from 0 to 1", "e.g. read_share = 0.6") from None
        if not 0 <= out["read_share"] <= 1:
            raise PlanError(f"{cls.name} read_share must be from 0 to 1", "e.g. read_share = 0.6 (60% reads)")
        if out["sync"] not in ("fsync", "fdatasync"):
            raise PlanError(f"{cls.name} sync {out['sync']!r} is not valid", "use fsync or fdatasync")
        if out["pattern"] not in ("random", "sequential"):
            raise PlanError(f"{cls.name} pattern {out['pattern']!r} is not valid", "use random or sequential")
        if out["block_size"] < 512 or out["block_size"] % 512:
            raise PlanError(f"{cls.name} block_size must be a multiple of 512 bytes", "e.g. block_size = \"16K\"")
        if out["size"] < out["files"] * out["block_size"]:
            raise PlanError(f"{cls.name} size is too small for {out['files']} files of one block",
                            "raise size or lower files")
        if out["duration"] <= 0:
            raise PlanError(f"{cls.name} duration must be positive", "e.g. --duration 10s")
        out["direct"] = bool(out["direct"])
        out["keep_cache"] = bool(out["keep_cache"])
        return out

    @classmethod
    def normalize(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = super().normalize(settings)
        if out.get("rate"):
            fixed_rate_limits(cls.name, out)
        return out

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        return fio_unavailable()

    @classmethod
    def space_needed(cls, spec: WorkloadSpec) -> int | None:
        return int(spec.get("size"))

    @classmethod
    def scaled(cls, spec: WorkloadSpec, data_bytes: int) -> dict[str, Any] | None:
        block = int(spec.get("block_size"))
        return {**dict(spec.settings), "size": max(data_bytes // block, spec.get("files")) * block}

    @staticmethod
    def _where(spec: WorkloadSpec, datadir: Path) -> dict[str, Any]:
        if is_block_device(datadir):
            return {"filename": str(datadir), "size": spec.get("size")}
        return {"directory": str(datadir), "filename_format": f"{FILE_PREFIX}.$filenum",
                "nrfiles": spec.get("files"), "size": spec.get("size")}

    def layout_job(self, spec: WorkloadSpec, datadir: Path) -> str:
        """Write every block once and sync, so measured runs never meet unwritten extents."""
        return job_text([("layout", {**self._where(spec, datadir), "rw": "write", "bs": "1M",
                                     "ioengine": "psync", "fallocate": "none", "end_fsync": 1})])

    def measured_job(self, spec: WorkloadSpec, datadir: Path) -> str:
        share = spec.get("read_share")
        sequential = spec.get("pattern") == "sequential"
        rw = ("read" if sequential else "randread") if share == 1 else \
            ("write" if sequential else "randwrite") if share == 0 else ("rw" if sequential else "randrw")
        depth = spec.get("iodepth")
        options: dict[str, Any] = {
            **self._where(spec, datadir),
            "rw": rw,
            "rwmixread": round(share * 100) if 0 < share < 1 else None,
            "bs": spec.get("block_size"),
            "ioengine": "psync" if depth == 1 else "libaio",
            "iodepth": depth if depth > 1 else None,
            "direct": int(spec.get("direct")),
            "numjobs": spec.get("threads"),
            "group_reporting": 1,
            "fallocate": "none",
            "time_based": 1,
            "runtime": f"{round(spec.get('duration') * 1000)}ms",
            "randrepeat": 1,
            "invalidate": 0 if spec.get("keep_cache") else None,
        }
        every = spec.get("fsync_every")
        if every:
            options[spec.get("sync")] = every
        if spec.get("rate"):
            options.update(self.rate_options(spec))
        return job_text([(self.name, options)])

    @staticmethod
    def rate_options(spec: WorkloadSpec) -> dict[str, Any]:
        """fio's own pacing (rate_iops per direction: reads before the comma, writes after it) and its per-I/O
        latency log, written to the directory in the `lat_log_dir` setting (the run's private directory)."""
        iops = split_rate(float(spec.get("rate")), float(spec.get("read_share")), 1)
        return {"rate_iops": f"{iops.get(0, '')}" + (f",{iops[1]}" if 1 in iops else ""),
                "rate_process": RATE_PROCESS[spec.get("arrivals")],
                "write_lat_log": f"{spec.get('lat_log_dir')}/{LAT_LOG}", "log_avg_msec": 0}

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        job = self.layout_job(spec, datadir)
        return RawOutput(json.dumps({"tool": TOOL, "step": "prepare", "job": job,
                                     "fio": fio_json(run_fio(job, timeout=7200))}), 0.0)

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        if spec.get("rate"):
            return self.run_at_rate(spec, datadir)
        job = self.measured_job(spec, datadir)
        out = run_fio(job, timeout=spec.get("duration") * 3 + 600)
        return RawOutput(json.dumps({"tool": TOOL, "workload": self.name, "job": job, "fio": fio_json(out)}),
                         spec.get("duration"))

    def run_at_rate(self, spec: WorkloadSpec, datadir: Path) -> RawOutput:
        """fio paced at the rate; its per-I/O log kept with the run, and each I/O's latency measured from the
        schedule fio followed (workloads/fio_rate.py), not from when fio issued it."""
        with log_directory(Ledger(self.cache.parent / "ledger")) as logdir:
            settings = {**dict(spec.settings), "lat_log_dir": str(logdir)}
            job = self.measured_job(WorkloadSpec(spec.name, spec.label, tuple(sorted(settings.items()))), datadir)
            out = fio_json(run_fio(job, timeout=spec.get("duration") * 3 + 600))
            log = logdir / f"{LAT_LOG}_lat.1.log"
            text = log.read_text() if log.exists() else ""
        doc = {"tool": TOOL, "workload": self.name, "job": job, "fio": out, "lat_log": text,
               "pacing": {"rate": float(spec.get("rate")), "read_share": float(spec.get("read_share")),
                          "arrivals": spec.get("arrivals"), "runtime_us": round(spec.get("duration") * 1000) * 1000,
                          "iodepth": int(spec.get("iodepth"))}}
        try:
            doc["fixed_rate"] = rate_block(doc)
        except ValueError as exc:  # parse() raises it again: the slice fails with fio's output and log kept
            doc["fixed_rate_error"] = str(exc)
        return RawOutput(json.dumps(doc), spec.get("duration"))

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("tool") != TOOL or "fio" not in doc:
            raise ValueError("not the output of a fio run")
        metrics = fileio_metrics(doc["fio"])
        if "pacing" in doc:  # at a fixed rate: latency from each I/O's due time, derived again from the log
            metrics.update(rate_metrics(rate_block(doc)))
            job = doc["fio"]["jobs"][0]
            metrics["client_cpu_share"] = (float(job.get("usr_cpu", 0.0)) + float(job.get("sys_cpu", 0.0))) / 100
        return metrics


def rate_block(doc: dict[str, Any]) -> dict[str, Any]:
    """A fixed-rate fio run's record -> the fixed-rate block, from fio's per-I/O log and the pacing it was given (pure)."""
    p = doc["pacing"]
    iops = split_rate(float(p["rate"]), float(p["read_share"]), 1)
    return fio_fixed_rate_block({1: doc.get("lat_log", "")}, [JobRate(1, iops)], p["arrivals"], int(p["runtime_us"]),
                                int(p["iodepth"]))


def fileio_metrics(fio: dict[str, Any]) -> dict[str, float]:
    """Metrics from one fio JSON document with one (group-reported) job (pure)."""
    jobs = fio.get("jobs") or []
    if not jobs:
        raise ValueError("fio reported no job")
    job = jobs[0]
    if job.get("error"):
        raise ValueError(f"fio job failed with error {job['error']}")
    read, write, sync = job.get("read", {}), job.get("write", {}), job.get("sync", {})
    out: dict[str, float] = {"iops": float(read.get("iops", 0)) + float(write.get("iops", 0))}
    runtime_s = max(float(read.get("runtime", 0)), float(write.get("runtime", 0))) / 1000
    for kind, section in (("read", read), ("write", write)):
        if not section.get("total_ios"):
            continue
        out[f"{kind}_iops"] = float(section["iops"])
        out[f"{kind}_MBps"] = float(section["bw_bytes"]) / 1e6
        for q, name in (("50", "p50"), ("99", "p99")):
            value = _percentile(section, "clat_ns", q)
            if value is not None:
                out[f"{kind}_{name}"] = value
    if sync_count(sync):
        if runtime_s > 0:
            out["syncs_per_s"] = sync_count(sync) / runtime_s
        for q, name in (("50", "p50"), ("99", "p99")):
            value = _percentile(sync, "lat_ns", q)
            if value is not None:
                out[f"sync_{name}"] = value
        out["sync_max"] = float(sync["lat_ns"]["max"]) / 1e9
    return out


class FileioFirstTouch(Fileio):
    name = "fileio-first-touch"
    description = ("fileio into freshly fallocated files: every write is the block's first, so the "
                   "filesystem converts unwritten extents as it goes (what a new database file meets)")
    supports_raw = False

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        return RawOutput(json.dumps({"tool": TOOL, "step": "prepare", "note": "files are made anew by each run"}), 0.0)

    def fresh_files(self, spec: WorkloadSpec, datadir: Path) -> None:
        """Recreate every file as preallocated, never written space; not part of fio's figures."""
        per_file = spec.get("size") // spec.get("files")
        for i in range(spec.get("files")):
            path = datadir / f"{FILE_PREFIX}.{i}"
            path.unlink(missing_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
            try:
                os.posix_fallocate(fd, 0, per_file)
                os.fsync(fd)
            finally:
                os.close(fd)
        os.sync()

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        try:
            self.fresh_files(spec, datadir)
        except OSError as exc:
            raise CommandFailed(["fallocate"], 1, f"could not preallocate the files: {exc.strerror}",
                                "this filesystem may not support fallocate; use the fileio workload") from None
        return super().run(spec, datadir, endpoint)


def _kib(size: int) -> str:
    return f"{size // 1024}k"


class Wal(Workload):
    kind = RAW_IO
    name = "wal"
    description = ("a write-ahead log: sequential 8/16 KiB writes, each made durable by every sync method "
                   "a database can use (like pg_test_fsync); syncs per second and latency per method")
    supports_raw = True
    metrics = (
        MetricDef("syncs_per_s", "syncs/s", True, "durable writes per second with the first method and block size "
                                                  "(default fdatasync at 8 KiB, PostgreSQL's default on Linux)"),
        *(MetricDef(f"{m}_{_kib(bs)}_per_s", "syncs/s", True, f"durable {_kib(bs)}B writes per second with {m}")
          for bs in WAL_BLOCK_SIZES for m in SYNC_METHODS),
        *(MetricDef(f"{m}_{_kib(bs)}_p99", "s", False,
                    f"99th percentile latency of the call that makes a {_kib(bs)}B write durable with {m}")
          for bs in WAL_BLOCK_SIZES for m in SYNC_METHODS),
        MetricDef("methods_refused", "methods", False, "sync methods the filesystem or device refused"),
    )
    breakdown = tuple(f"{m}_{_kib(bs)}_per_s" for bs in WAL_BLOCK_SIZES for m in SYNC_METHODS)
    sliceable = True
    slice_seconds = 2.0  # shared among the methods and block sizes
    defaults: ClassVar[dict[str, Any]] = {
        "methods": list(SYNC_METHODS),
        "block_sizes": ["8K", "16K"],
        "layout": "prewritten",  # like PostgreSQL's recycled, zero-filled segments; or append (a growing file)
        "file_size": "16M",  # a PostgreSQL WAL segment
        "duration": 2.0,  # per method and block size
    }

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        methods = out["methods"] if isinstance(out["methods"], list) else [out["methods"]]
        bad = [m for m in methods if m not in SYNC_METHODS]
        if bad or not methods:
            raise PlanError(f"wal methods {', '.join(map(str, bad)) or '(none)'} not known",
                            f"use some of {', '.join(SYNC_METHODS)}")
        out["methods"] = list(dict.fromkeys(methods))
        sizes = out["block_sizes"] if isinstance(out["block_sizes"], list) else [out["block_sizes"]]
        out["block_sizes"] = list(dict.fromkeys(parse_size(s) for s in sizes))
        if not out["block_sizes"] or any(s not in WAL_BLOCK_SIZES for s in out["block_sizes"]):
            raise PlanError("wal block_sizes must be among 4K, 8K and 16K", 'e.g. block_sizes = ["8K", "16K"]')
        if out["layout"] not in ("prewritten", "append"):
            raise PlanError(f"wal layout {out['layout']!r} is not valid", "use prewritten or append")
        out["file_size"] = parse_size(out["file_size"])
        out["duration"] = parse_duration(out["duration"])
        if out["duration"] <= 0:
            raise PlanError("wal duration must be positive", "e.g. --duration 2s (per method)")
        if out["file_size"] < max(out["block_sizes"]):
            raise PlanError("wal file_size is smaller than a block", 'e.g. file_size = "16M"')
        return out

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        return fio_unavailable()

    @classmethod
    def run_seconds(cls, spec: WorkloadSpec) -> float:
        return float(spec.get("duration")) * len(spec.get("methods")) * len(spec.get("block_sizes"))

    @classmethod
    def slice_spec(cls, spec: WorkloadSpec, seconds: float) -> WorkloadSpec:
        """A slice gives each method and block size its share of the slice (at least 0.1 s)."""
        share = max(0.1, seconds / (len(spec.get("methods")) * len(spec.get("block_sizes"))))
        return super().slice_spec(spec, share)

    @staticmethod
    def _target(spec: WorkloadSpec, datadir: Path) -> str:
        return str(datadir) if is_block_device(datadir) else str(datadir / WAL_FILE)

    def job(self, spec: WorkloadSpec, datadir: Path, method: str, block_size: int) -> str:
        append = spec.get("layout") == "append" and not is_block_device(datadir)
        options: dict[str, Any] = {
            "filename": self._target(spec, datadir),
            "rw": "write",
            "bs": block_size,
            "size": spec.get("file_size") if not append else "4G",
            "ioengine": "psync",
            "fallocate": "none",
            "file_append": 1 if append else None,
            "time_based": 1,
            "runtime": f"{round(spec.get('duration') * 1000)}ms",
            **SYNC_METHODS[method],
        }
        return job_text([(f"{method}-{_kib(block_size)}", options)])

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        if spec.get("layout") == "append" and not is_block_device(datadir):
            return RawOutput(json.dumps({"tool": TOOL, "step": "prepare", "note": "append: each job starts a new file"}),
                             0.0)
        job = job_text([("layout", {"filename": self._target(spec, datadir), "rw": "write", "bs": "1M",
                                    "size": spec.get("file_size"), "ioengine": "psync", "fallocate": "none",
                                    "end_fsync": 1})])
        return RawOutput(json.dumps({"tool": TOOL, "step": "prepare", "job": job,
                                     "fio": fio_json(run_fio(job, timeout=3600))}), 0.0)

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        results = []
        for bs in spec.get("block_sizes"):
            for method in spec.get("methods"):
                if spec.get("layout") == "append" and not is_block_device(datadir):
                    Path(self._target(spec, datadir)).unlink(missing_ok=True)
                job = self.job(spec, datadir, method, bs)
                entry: dict[str, Any] = {"method": method, "block_size": bs, "job": job}
                try:
                    entry["fio"] = fio_json(run_fio(job, timeout=spec.get("duration") * 3 + 300))
                except CommandFailed as exc:
                    entry["error"] = exc.one_line()
                results.append(entry)
        total = spec.get("duration") * len(results)
        return RawOutput(json.dumps({"tool": TOOL, "workload": self.name, "layout": spec.get("layout"),
                                     "results": results}), total)

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("tool") != TOOL or doc.get("workload") != "wal":
            raise ValueError("not the output of a wal run")
        out: dict[str, float] = {}
        refused = 0
        for entry in doc["results"]:
            key = f"{entry['method']}_{_kib(entry['block_size'])}"
            job = ((entry.get("fio") or {}).get("jobs") or [{}])[0]
            if entry.get("error") or job.get("error") or not job.get("write", {}).get("total_ios"):
                refused += 1
                continue
            write, sync = job["write"], job.get("sync", {})
            out[f"{key}_per_s"] = float(write["iops"])
            durable = _percentile(sync, "lat_ns", "99") if sync_count(sync) else _percentile(write, "clat_ns", "99")
            if durable is not None:
                out[f"{key}_p99"] = durable
        first = doc["results"][0] if doc["results"] else None
        if first is not None:
            head = f"{first['method']}_{_kib(first['block_size'])}_per_s"
            if head in out:
                out["syncs_per_s"] = out[head]
        out["methods_refused"] = float(refused)
        return out

    @staticmethod
    def notes_from(raw: str) -> list[str]:
        notes = []
        for entry in json_doc(raw).get("results", []):
            job = ((entry.get("fio") or {}).get("jobs") or [{}])[0]
            if entry.get("error") or job.get("error"):
                why = entry.get("error") or f"fio error {job.get('error')}"
                notes.append(f"wal {entry['method']} at {_kib(entry['block_size'])}B refused: {why}")
        return notes
