"""One fault cell: a configuration on a disk that fails on command, a database committing through the fault,
what the server and the filesystem did, and every transaction after restart.

1. Build the configuration on an image the recorder serves (crash/recorder.py, a fault switch given); start
   the database, create the tables, sync.
2. The client commits numbered transactions and logs every acknowledgement and every error (on another
   filesystem). Once commits have flowed for the plan's moment, the fault is armed (a write fault aimed at the
   blocks of its files, as the filesystem maps them, checked against the device); the kernel's messages about
   the device and the server's log are read while it runs. The cell has a time limit: past it, "hung".
3. The fault is disarmed; the server stopped; the filesystem unmounted and its loop device detached (its
   caches go with them); then a new loop device, a mount (journal replay), the database started (its
   recovery), and the commits present, the database's own check and the transactions' invariant read; fsck.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from pickfs import databases
from pickfs.crash.runner import PROGRAM, backend_of, fsck
from pickfs.crash.station import Station
from pickfs.errors import CommandFailed, PickfsError
from pickfs.faults import outcome as oc
from pickfs.faults.disk import FaultyDisk, faulty_disk
from pickfs.faults.extents import mapping_disagrees
from pickfs.faults.journal import find_journal, journal_place, journalled_types
from pickfs.faults.plan import LAYOUTS, FaultPlan
from pickfs.faults.watch import KernelLog, alive, read_only, server_lines
from pickfs.fsfacts import traits
from pickfs.model import FsConfig, Target, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.services import service_class
from pickfs.services.base import Endpoint
from pickfs.stack.cleanup import holding
from pickfs.stack.filesystems import fs_type, unavailable_reason
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision

CLIENT = "pickfs.faults.client"
STEM = "commits"
AIM_EVERY_S = 0.25  # a write fault's blocks mapped again this often (new WAL segments, grown files)
WRITE_BACK_EVERY_S = 0.5
SERVER_LINES = re.compile(r"PANIC|FATAL|ERROR|WARNING|LOG:  (all server processes|database system)|terminated by")
NOTABLE = re.compile(r"PANIC|FATAL|ERROR|WARNING|terminated by|reinitializing")


def fault_unavailable(config: FsConfig, spec: WorkloadSpec, fault: FaultPlan) -> str | None:
    """Why this cell cannot run here (None: it can)."""
    if not fs_type(config.fstype).on_block_device:
        return f"a fault needs a filesystem on a block device, not {config.fstype}"
    backend = backend_of(spec)
    if fault.kind.of_filesystem and journal_place(config.fstype) is None:
        return (f"{config.fstype} keeps no journal a write fault can be aimed at "
                f"(those of {', '.join(journalled_types())} can)")
    if backend == PROGRAM:
        return program_unavailable(config, spec, fault)
    if backend not in LAYOUTS:
        return f"faults are injected under {', '.join(LAYOUTS)} so far, not {backend or spec.name}"
    if fault.kind.part and fault.kind.part not in LAYOUTS[str(backend)].parts:
        return f"{backend} keeps no {fault.kind.part} files to fail writes to"
    db = databases.get(str(backend))
    if db.service is not None:
        reason = service_class(db.service).unavailable_reason()
        if reason:
            return reason
    return unavailable_reason(config.fstype) or (db.unavailable_reason() if db.service is None else None)


def program_unavailable(config: FsConfig, spec: WorkloadSpec, fault: FaultPlan) -> str | None:
    """Why the user's own command cannot be fault-tested here (None: it can)."""
    if fault.kind.part:
        return f"your own command keeps no {fault.kind.part} files pickfs knows of: use flush or write:journal"
    server = spec.get("server") or None
    return (service_class(server).unavailable_reason() if server else None) or unavailable_reason(config.fstype)


def settings_text(spec: WorkloadSpec) -> str:
    """The settings a fault's outcome depends on, as the cell ran them (pure)."""
    shown = LAYOUTS[str(backend_of(spec))].shown
    return ", ".join(f"{k}={spec.get(k)}" for k in shown if spec.get(k) not in (None, ""))


def _client_argv(step: str, backend: str, datadir: Path, endpoint: Endpoint | None,
                 settings: dict[str, Any]) -> tuple[list[str], dict[str, str] | None]:
    db = databases.get(backend)
    argv = [sys.executable, "-m", CLIENT, step, "--backend", backend,
            *db.connection_args(datadir, endpoint, settings, STEM)]
    return argv, db.client_env(datadir, None, endpoint)


def _server(backend: str, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path,
            fresh: bool) -> AbstractContextManager[Endpoint | None]:
    service = databases.get(backend).service
    if service is None:
        return nullcontext(None)
    return service_class(service).start(datadir, settings, ledger, rundir, fresh=fresh)


def truth_after(image: Path, base: Path, ledger: Ledger, config: FsConfig,
                judge: Callable[[Path], oc.Truth]) -> oc.Truth:
    """The cell's image mounted again on a new loop device (journal replay), judged on its data directory (the
    database recovered and read, or the user's check), then fsck once nothing holds the filesystem: as a crash
    test checks a state, through a station of its own (crash/station.py), whose let_go unmounts a copy of the mount
    another mount namespace made meanwhile; what would not mount, or stayed held, says so."""
    with ExitStack() as stack:
        station = Station(stack, ledger, config, image, base / "mnt-after")
        with station.attached() as device:
            with station.mounted(device) as refused:
                truth = oc.Truth(False, problem=f"the filesystem {refused}"[:300]) if refused else \
                    judge(station.mountpoint / "pickfs-data")
            held = "" if refused else station.let_go(device)
            clean, said = fsck(config.fstype, device)
    return replace(truth, problem="; ".join(x for x in (truth.problem, held) if x), fsck_ok=clean, fsck_said=said)


def behaviour_of(kernel: KernelLog, mountpoint: str, endpoint: Endpoint | None, told: list[str],
                 without_server: str, committed_after: bool = False) -> oc.Behaviour:
    """What the server did (its log, which is on the filesystem under test, and what its client was `told`;
    `without_server` when pickfs started none) and what the filesystem did (the kernel's messages, read-only or
    not)."""
    lines = (server_lines(endpoint.log, SERVER_LINES) if endpoint is not None else []) + [f"client: {x}" for x in told]
    if endpoint is None:
        server = without_server
    else:
        server = oc.server_said(lines, alive(endpoint.pidfile) if endpoint.pidfile else False, False, committed_after)
    said = kernel.read()
    return oc.Behaviour(server, oc.filesystem_said(said, read_only(mountpoint)), tuple(said[:12]),
                        tuple([x for x in lines if NOTABLE.search(x)][:12]))


class Cell:
    """The parts of one cell's run, in order (see the module's text)."""

    def __init__(self, config: FsConfig, spec: WorkloadSpec, fault: FaultPlan, base: Path, ledger: Ledger,
                 duration: float, limit_s: float, progress: Callable[[str], None]) -> None:
        self.config, self.spec, self.fault, self.base, self.ledger = config, spec, fault, base, ledger
        self.backend = str(backend_of(spec))
        self.settings = dict(spec.settings)
        self.duration, self.limit_s, self.progress = duration, limit_s, progress
        self.log = base / "client.log"
        self.notes: list[str] = []
        self.resolved: dict[str, str] = {}  # the files the database named once its tables existed
        self.journal: list[tuple[int, int]] = []  # the filesystem's journal on the device (write:journal)

    def load(self, datadir: Path, endpoint: Endpoint | None) -> None:
        """The tables created and filled; the files the layout's queries name noted."""
        said = self.client("load", datadir, endpoint, 600).strip().splitlines()
        try:
            found = json.loads(said[-1]).get("resolved", {}) if said else {}
        except ValueError:
            found = {}
        self.resolved = {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}

    def client(self, step: str, datadir: Path, endpoint: Endpoint | None, timeout: float) -> str:
        argv, env = _client_argv(step, self.backend, datadir, endpoint, self.settings)
        return run_program(argv, timeout=timeout, env=env).text

    def after_load(self, datadir: Path, endpoint: Endpoint | None) -> None:
        """Settings made on the database once its tables exist (Firebird's forced writes)."""
        _, env = _client_argv("load", self.backend, datadir, endpoint, self.settings)
        databases.get(self.backend).after_load(datadir, endpoint, env, self.settings, STEM)

    def outside_check(self, datadir: Path, endpoint: Endpoint | None) -> list[str]:
        """What the database's check run outside its client found broken (Firebird's gfix -v); [] for none."""
        _, env = _client_argv("check", self.backend, datadir, endpoint, self.settings)
        errors, _ = databases.get(self.backend).outside_check(datadir, STEM, env)
        return errors

    def commit_through(self, disk: FaultyDisk, datadir: Path, endpoint: Endpoint | None,
                       stack: ExitStack) -> oc.Ended:
        """The client commits while the fault is armed at its moment: MEASURED when it ended in time, HUNG when
        it did not, NOT_RUN when the fault could not be armed (the notes say why)."""
        argv, env = _client_argv("run", self.backend, datadir, endpoint, self.settings)
        argv += ["--log", str(self.log), "--duration", str(self.duration), "--seed", str(self.fault.seed),
                 "--checkpoint-every", str(WRITE_BACK_EVERY_S)]
        with holding(self.ledger, "process", child_pid=0, match=CLIENT, stop_signal="SIGKILL") as box, \
                open(self.base / "client.err", "wb") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    env=None if env is None else {**os.environ, **env}, start_new_session=True)
            box[0] = self.ledger.update(box[0], child_pid=proc.pid)
            t0 = time.monotonic()
            armed: bool | None = None  # None: not yet; False: it could not be
            deadline = t0 + self.duration + self.limit_s
            while proc.poll() is None and time.monotonic() < deadline:
                if armed is None and time.monotonic() - t0 >= self.fault.arm_after_s:
                    armed = self.arm(disk, datadir, stack)
                    if not armed:
                        break
                elif armed and self.fault.kind.part:
                    disk.aim(self.fault.kind.files(datadir, LAYOUTS[self.backend], self.resolved))
                to_arm = t0 + self.fault.arm_after_s - time.monotonic()
                time.sleep(min(AIM_EVERY_S, to_arm) if armed is None and to_arm > 0.01 else AIM_EVERY_S)
            ended = proc.poll() is not None
            disk.disarm()  # before the client is stopped: a request blocked on the fault can finish
            if not ended:
                proc.send_signal(signal.SIGKILL)
                self.notes.append(f"the client was still running {self.limit_s:.0f} s after its "
                                  f"{self.duration:g} s of commits, and was stopped")
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.notes.append("the client could not be stopped within 60 s of the fault being disarmed")
        if ended and proc.returncode != 0:
            said = (self.base / "client.err").read_text(errors="replace").strip().splitlines()
            self.notes.append(f"the client failed (exit {proc.returncode}): {said[-1][:300] if said else ''}")
        if armed is None:
            self.notes.append("the client ended before the fault was armed")
        if not armed:
            return oc.Ended.NOT_RUN
        return oc.Ended.MEASURED if ended else oc.Ended.HUNG

    def mapping_problem(self, datadir: Path, device: str) -> str | None:
        """Why a write fault cannot be aimed on this filesystem: its file mapping, read while the database is
        idle after loading, is not the device's addresses (tried three times: a page may change meanwhile)."""
        layout = LAYOUTS[self.backend]
        files = sorted({p for part in layout.parts for p in layout.files(datadir, part, self.resolved)})
        wrong = None
        for _ in range(3):
            os.sync()
            wrong = mapping_disagrees(device, files)
            if wrong is None:
                return None
            time.sleep(0.2)
        return f"a write fault cannot be aimed on {self.config.fstype}: {wrong}"

    def find_journal(self, device: str) -> str | None:
        """The filesystem's journal on the device, as its own tools read it (write:journal); why not, else."""
        self.journal, why = find_journal(self.config.fstype, device)
        return why

    def arm(self, disk: FaultyDisk, datadir: Path, stack: ExitStack) -> bool:
        if self.fault.kind.of_filesystem:
            disk.aim_ranges(self.fault.kind.journal_ranges(self.journal))
        if self.fault.kind.part:
            files = self.fault.kind.files(datadir, LAYOUTS[self.backend], self.resolved)
            if not files:
                self.notes.append(f"no {self.fault.kind.part} file was there to fail writes to")
                return False
            os.sync()  # the files' blocks placed before they are mapped
            if not disk.aim(files):
                self.notes.append(f"the {self.fault.kind.part} files had no blocks placed on the device yet")
                return False
        disk.arm(self.ledger, stack)
        self.progress(f"{self.config.name}, {self.spec.label}: fault armed ({self.fault.kind.name})")
        return True

    def behaviour(self, kernel: KernelLog, mountpoint: str, endpoint: Endpoint | None) -> oc.Behaviour:
        text = self.log.read_text() if self.log.exists() else ""
        told = [x.split(" ", 3)[-1] for x in text.splitlines() if x.split(" ", 2)[1:2] in (["E"], ["C"])]
        return behaviour_of(kernel, mountpoint, endpoint, list(dict.fromkeys(told)) if endpoint is not None else [],
                            oc.EMBEDDED, oc.committed_after_error(oc.parse_client_log(text)))

    def truth(self, image: Path) -> oc.Truth:
        """The filesystem mounted again on a new loop device (journal replay), the database started (recovery),
        every commit read; fsck after unmounting."""
        return truth_after(image, self.base, self.ledger, self.config, self.recovered)

    def recovered(self, datadir: Path) -> oc.Truth:
        try:
            with _server(self.backend, datadir, self.settings, self.ledger, self.base / "run", False) as endpoint:
                doc = json.loads(self.client("check", datadir, endpoint, 180).strip().splitlines()[-1])
                broken = self.outside_check(datadir, endpoint) if "present" in doc else []
        except (PickfsError, ValueError, IndexError) as exc:
            why = exc.one_line() if isinstance(exc, PickfsError) else str(exc)
            return oc.Truth(False, problem=f"the database would not start: {why}"[:400])
        if "open_error" in doc:
            return oc.Truth(False, problem=f"the database would not open: {doc['open_error']}")
        if "present" not in doc:
            return oc.Truth(True, problem=str(doc.get("query_error", "")), own_check=str(doc.get("query_error")))
        own = "; ".join(broken)[:300] if broken else str(doc.get("own_check", ""))
        return oc.Truth(True, frozenset(doc["present"]), doc.get("newest"), own,
                        str(doc.get("invariant", "")), str(doc.get("query_error", "")))


def fault_cell(config: FsConfig, spec: WorkloadSpec, fault: FaultPlan, workdir: Path, ledger: Ledger,
               size: int = 512 * 1024**2, duration: float = 4.0, limit_s: float = 120.0,
               progress: Callable[[str], None] = lambda s: None) -> oc.FaultCell:
    """Run one cell; everything it made undone before it returns (recorded in the ledger before it was made)."""
    t0 = time.monotonic()
    reason = fault_unavailable(config, spec, fault)
    if reason:
        return oc.FaultCell(config.name, str(backend_of(spec) or spec.name), "", fault.kind.name, fault.text,
                            oc.Ended.NOT_RUN, notes=(reason,))
    base = workdir / "faults" / uuid.uuid4().hex[:12]
    with holding(ledger, "dir", path=str(base), recursive=True):
        base.mkdir(mode=0o711, parents=True)  # the server's user passes through to its data directory
        cell = Cell(config, spec, fault, base, ledger, duration, limit_s, progress)
        with faulty_disk(base, size, ledger, fault) as disk:
            cell.notes += disk.notes()
            target = Target(kind="image", workdir=str(base), size_bytes=size)
            ended, stopped = oc.Ended.NOT_RUN, ""
            behaviour: oc.Behaviour | None = None
            with provision(config, target, ledger, image=disk.image) as prov:
                device = prov.info.device or ""
                kernel = KernelLog(Path(device).name)
                try:
                    with ExitStack() as armed:
                        try:
                            with _server(cell.backend, prov.datadir, cell.settings, ledger, base / "run",
                                         True) as endpoint:
                                cell.load(prov.datadir, endpoint)
                                cell.after_load(prov.datadir, endpoint)
                                os.sync()
                                wrong = cell.mapping_problem(prov.datadir, device) if fault.kind.part else \
                                    cell.find_journal(device) if fault.kind.of_filesystem else None
                                if wrong:
                                    cell.notes.append(wrong)
                                    ended = oc.Ended.NOT_RUN
                                else:
                                    ended = cell.commit_through(disk, prov.datadir, endpoint, armed)
                                behaviour = cell.behaviour(kernel, prov.info.mountpoint, endpoint)
                        except (PickfsError, CommandFailed) as exc:  # a server that cannot stop cleanly
                            stopped = exc.one_line()[:300]
                finally:
                    kernel.close()
                disk.disarm()
            if ended is oc.Ended.NOT_RUN and not stopped:
                return oc.FaultCell(config.name, cell.backend, settings_text(spec), fault.kind.name, fault.text,
                                    ended, notes=tuple(cell.notes), seconds=time.monotonic() - t0)
            if stopped and behaviour is None:
                raise PickfsError(f"the cell failed before its fault: {stopped}", "see the message")
            if stopped:
                cell.notes.append(f"stopping the server: {stopped}")
            truth = cell.truth(disk.image)
            injected = disk.failures()
        log = oc.parse_client_log(cell.log.read_text() if cell.log.exists() else "")
    return oc.FaultCell(config.name, cell.backend, settings_text(spec), fault.kind.name, fault.text, ended,
                        injected=len(injected), counts=oc.classify(log, truth), behaviour=behaviour, truth=truth,
                        first_error=log.first_error, told_after_s=oc.told_after(log, injected),
                        write_back_errors=log.write_back_errors,
                        write_back_ok_after_error=log.write_back_ok_after_error,
                        traits=traits(config.fstype, config.mount_options), notes=tuple(cell.notes),
                        seconds=time.monotonic() - t0)
