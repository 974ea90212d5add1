"""A crash test of one configuration and database: record, rebuild power-cut states, check each.

1. Build the configuration on an image that lives on the recorder; start the database there
   (its durability settings as the workload says); create the tables; sync.
2. Run numbered commits for a while; the client logs each acknowledgement on another filesystem.
3. Stop everything; from the log, make crash states (see states.py); for each: rebuild the image
   as the disk would hold it, mount it (journal replay), open the database (its recovery), list
   the commits present and run its own consistency check, unmount and run the filesystem's fsck.
Speed is never measured here: the recorder is slow by design.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pickfs.crash import log as wlog
from pickfs.crash.session import fuse_unavailable, recording
from pickfs.crash.states import CrashState, generate, losses, parse_acks, window
from pickfs.errors import PickfsError
from pickfs.model import FsConfig, Target, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services import service_class
from pickfs.services.base import Endpoint
from pickfs.stack.cleanup import holding
from pickfs.stack.filesystems import RAW, SBIN_PATH, unavailable_reason
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import attached, mount, provision
from pickfs.workloads import workload_class
from pickfs.workloads.tpcc import connection_args, firebird_env, firebird_unavailable, set_forced_writes

CLIENT = "pickfs.clients.commits"
DB_STEM = "commits"
FB_FILE = f"{DB_STEM}.fdb"
MODEL = ("worst-case disk: a power cut drops any write not yet flushed, in any order (the volatile write "
         "cache of a drive without power-loss protection; one with it would do better); the state when the "
         "workload began is taken as on disk")
BACKENDS = ("sqlite", "postgresql", "mariadb", "firebird")


def crash_unavailable(config: FsConfig, spec: WorkloadSpec) -> str | None:
    backend = workload_class(spec.name).database_for(spec)
    if config.fstype in (RAW, "tmpfs"):
        return f"a crash test needs a filesystem on a block device, not {config.fstype}"
    if backend is None:
        return f"{spec.name} has no database to crash-test"
    reason = unavailable_reason(config.fstype)
    if reason:
        return reason
    if backend not in BACKENDS:
        return f"crash tests do not cover {backend}"
    if backend == "firebird" and firebird_unavailable():
        return firebird_unavailable()
    return fuse_unavailable()


@dataclass(frozen=True)
class StateResult:
    index: int
    mode: str
    cut: int
    dropped: int  # unflushed writes lost
    mounted: bool
    fsck_ok: bool | None
    db_opened: bool
    consistent: bool | None
    lost: int
    lost_seconds: float
    acked_before: int
    problem: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class CrashResult:
    backend: str
    commits: int  # acknowledged during the recording
    records: int
    flushes: int  # flushes the device sent while the workload ran
    states: tuple[StateResult, ...]
    record_seconds: float
    model: str = MODEL

    def metrics(self) -> dict[str, float]:
        s = self.states
        return {
            "crash_states": float(len(s)),
            "crash_states_lost": float(sum(1 for x in s if x.lost)),
            "crash_max_lost": float(max((x.lost for x in s), default=0)),
            "crash_max_lost_s": float(max((x.lost_seconds for x in s), default=0.0)),
            "crash_unmountable": float(sum(1 for x in s if not x.mounted)),
            "crash_fsck_failed": float(sum(1 for x in s if x.fsck_ok is False)),
            "crash_db_failed": float(sum(1 for x in s if x.mounted and not x.db_opened)),
            "crash_inconsistent": float(sum(1 for x in s if x.consistent is False)),
            "crash_commits": float(self.commits),
            "crash_flushes": float(self.flushes),
            "crash_s_per_state": sum(x.seconds for x in s) / len(s) if s else 0.0,
        }

    def as_json(self) -> str:
        return json.dumps(asdict(self))


def _client(step: str, backend: str, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
            extra: list[str] = ()) -> dict:
    argv = [sys.executable, "-m", CLIENT, step, "--backend", backend,
            *connection_args(backend, datadir, endpoint, settings, DB_STEM)]
    env = firebird_env(datadir) if backend == "firebird" else None
    out = run_program([*argv, *extra], timeout=3600, env=env).text
    if step == "load" and backend == "firebird":
        set_forced_writes(datadir / FB_FILE, str(settings.get("forced_writes", "on")) == "on", env or {})
    doc = json.loads(out.strip().splitlines()[-1])
    if step == "check" and backend == "firebird" and "own_check" in doc:
        # Firebird's own validation, read-only (-n): it names every page and record it finds broken
        said = run_program(["gfix", "-v", "-full", "-n", str(datadir / FB_FILE)], package="firebird3.0-utils",
                           env=env).text
        errors, warnings = gfix_findings(said)
        if errors:
            doc["own_check"] = f"gfix -v: {'; '.join(errors)}"
        elif warnings:
            doc["warnings"] = f"gfix -v warnings (not errors): {'; '.join(warnings)}"
    return doc


def gfix_findings(text: str) -> tuple[list[str], list[str]]:
    """gfix -v's summary lines ('Number of record level errors : 2') as errors and warnings (pure)."""
    errors, warnings = [], []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = " ".join(key.split()), value.strip()
        if not value.isdigit() or int(value) == 0:
            continue
        if "error" in key.lower():
            errors.append(f"{key}: {value}")
        elif "warning" in key.lower():
            warnings.append(f"{key}: {value}")
    return errors, warnings


def _server(backend: str, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path, fresh: bool):
    if backend in ("sqlite", "firebird"):  # embedded: the client process is the database
        return nullcontext(None)
    return service_class(backend).start(datadir, settings, ledger, rundir, fresh=fresh)


FSCK = {"ext2": ["e2fsck", "-fn"], "ext3": ["e2fsck", "-fn"], "ext4": ["e2fsck", "-fn"],
        "xfs": ["xfs_repair", "-n"], "btrfs": ["btrfs", "check", "--readonly"]}


def fsck(fstype: str, device: str) -> tuple[bool | None, str]:
    """The filesystem's own check, read-only: (clean?, what it said); None when there is no checker."""
    argv = FSCK.get(fstype, [f"fsck.{fstype}", "-n"])
    try:
        proc = subprocess.run([*argv, device], capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PATH": SBIN_PATH})
    except FileNotFoundError:
        return None, f"{argv[0]} is not installed"
    lines = [x.strip() for x in (proc.stdout + proc.stderr).splitlines() if x.strip()]
    if lines and lines[0].startswith(("e2fsck 1.", "Phase 1")):
        lines = lines[1:]
    return proc.returncode == 0, " | ".join(lines)[:300]


def check_state(config: FsConfig, image: Path, work: Path, ledger: Ledger, backend: str,
                settings: dict[str, Any], acks: dict[int, int], state: CrashState) -> StateResult:
    """Mount the crash image (journal replay), recover the database, count what is missing, fsck."""
    t0 = time.monotonic()
    acked = sum(1 for t in acks.values() if t < state.t_ns)
    common = dict(index=state.index, mode=state.mode, cut=state.cut, dropped=state.dropped, acked_before=acked)
    mnt = work / f"mnt-{state.index}"
    with attached(image, ledger) as device:
        mounted, opened, consistent, problem = False, False, None, ""
        present: set[int] = set()
        with ExitStack() as stack:
            stack.enter_context(holding(ledger, "dir", path=str(mnt)))
            mnt.mkdir()
            try:
                mount(ledger, stack, device, mnt, config.fstype, config.mount_options)
                mounted = True
            except PickfsError as exc:
                problem = f"would not mount: {exc.message}"
            if mounted:
                datadir = mnt / "pickfs-data"
                try:
                    with _server(backend, datadir, settings, ledger, work / "run", fresh=False) as endpoint:
                        doc = _client("check", backend, datadir, endpoint, settings)
                    if "open_error" in doc or "query_error" in doc:
                        problem = f"database: {doc.get('open_error') or doc.get('query_error')}"
                        opened = "open_error" not in doc
                        consistent = False if opened else None
                    else:
                        opened = True
                        present = set(doc["present"])
                        bad = [x for x in (doc["own_check"], doc["invariant"]) if x != "ok"]
                        consistent = not bad
                        problem = "; ".join([*bad, *([doc["warnings"]] if doc.get("warnings") else [])])
                except PickfsError as exc:
                    problem = f"database would not start: {exc.one_line()}"[:400]
        clean, said = fsck(config.fstype, device)
        if clean is False:
            problem = "; ".join(x for x in (problem, f"fsck: {said}") if x)
    loss = losses(acks, present, state.t_ns) if opened else losses(acks, set(), state.t_ns)
    return StateResult(**common, mounted=mounted, fsck_ok=clean, db_opened=opened, consistent=consistent,
                       lost=len(loss.lost), lost_seconds=loss.seconds, problem=problem,
                       seconds=time.monotonic() - t0)


def crash_test(config: FsConfig, spec: WorkloadSpec, workdir: Path, ledger: Ledger, n_states: int = 12,
               size: int = 512 * 1024**2, duration: float = 3.0, seed: int = 1,
               progress: Callable[[str], None] = lambda s: None) -> CrashResult:
    backend = workload_class(spec.name).database_for(spec)
    reason = crash_unavailable(config, spec)
    if reason or backend is None:
        raise PickfsError(f"unavailable: {reason}", "pick another configuration or workload for the crash test")
    settings = dict(spec.settings)
    base = workdir / "crash" / uuid.uuid4().hex[:12]
    with holding(ledger, "dir", path=str(base), recursive=True):
        t0 = time.monotonic()
        with recording(base, size, ledger) as rec:
            target = Target(kind="image", workdir=str(base), size_bytes=size)
            with provision(config, target, ledger, image=rec.image) as prov:
                with _server(backend, prov.datadir, settings, ledger, base / "run", fresh=True) as endpoint:
                    _client("load", backend, prov.datadir, endpoint, settings)
                    os.sync()
                    t_start = time.monotonic_ns()
                    run = _client("run", backend, prov.datadir, endpoint, settings,
                                  ["--acks", str(base / "acks.log"), "--duration", str(duration),
                                   "--seed", str(seed)])
                    t_end = time.monotonic_ns()
        record_s = time.monotonic() - t0
        records = wlog.read_log(rec.log)
        acks = parse_acks((base / "acks.log").read_text())
        first, last = window(records, t_start, t_end)
        flushes = sum(1 for r in records[first:last] if r.kind == wlog.FLUSH)
        states = generate(records, t_start, t_end, n_states, seed)
        progress(f"recorded {run['commits']} commits, {last - first} writes and flushes; checking {len(states)} states")
        start_image = base / "start.img"
        with open(start_image, "wb") as fh:
            fh.truncate(size)
        wlog.apply(rec.log, records[:first], start_image)
        os.unlink(rec.backing)  # the final state is not needed; keep the disk use down
        results = []
        for st in states:
            t_state = time.monotonic()
            image = base / f"state-{st.index}.img"
            subprocess.run(["cp", "--sparse=always", str(start_image), str(image)], check=True)
            wlog.apply(rec.log, [records[i] for i in st.applied(first)], image)
            r = check_state(config, image, base, ledger, backend, settings, acks, st)
            image.unlink()
            r = replace(r, seconds=time.monotonic() - t_state)  # building the image included
            results.append(r)
            problem = f"; {r.problem[:120]}{'...' if len(r.problem) > 120 else ''}" if r.problem else ""
            progress(f"state {st.index + 1}/{len(states)} ({st.mode}): "
                     + (f"lost {r.lost:,} of {r.acked_before:,} acknowledged commits" if r.lost else
                        f"all {r.acked_before:,} acknowledged commits present") + problem)
        shutil.rmtree(base, ignore_errors=True)
    return CrashResult(backend, len(acks), last - first, flushes, tuple(results), record_s)
