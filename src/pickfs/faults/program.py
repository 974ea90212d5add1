"""The user's own command under a fault, as the power-cut test runs it: the command runs as the `command` workload
does, writing a line to $PICKFS_ACKS for each piece of work it has made durable (pickfs stamps each as it arrives);
the fault is armed at its moment while it runs; after the restart (the filesystem mounted again, its server, if it
has one, started on it) the user's check judges what is there, given the acknowledged lines in $PICKFS_ACKS (exit
status 0: consistent). Which acknowledged work was lost, pickfs cannot tell: the check's answer is the truth.

The command has the cell's time limit (--duration plus --fault-limit): past it, it is ended and the cell is hung.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from pickfs.crash.runner import Program, arrivals
from pickfs.errors import CommandFailed, PickfsError
from pickfs.faults import outcome as oc
from pickfs.faults.disk import FaultyDisk, faulty_disk
from pickfs.faults.journal import find_journal
from pickfs.faults.plan import FaultPlan
from pickfs.faults.runner import behaviour_of, fault_unavailable, settings_text, truth_after
from pickfs.faults.watch import KernelLog
from pickfs.model import FsConfig, Target, WorkloadSpec
from pickfs.services.base import Endpoint
from pickfs.stack.cleanup import holding
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision

NEVER = 2**63  # every acknowledged line is owed to the check


class Arming:
    """The fault armed from a timer while the command runs (the command's run blocks the cell's thread)."""

    def __init__(self, disk: FaultyDisk, ledger: Ledger, stack: ExitStack, journal: list[tuple[int, int]]) -> None:
        self.disk, self.ledger, self.stack, self.journal = disk, ledger, stack, journal
        self.lock = threading.Lock()
        self.done = False
        self.armed = False
        self.error = ""

    def arm(self) -> None:
        with self.lock:
            if self.done:
                return
            try:
                if self.journal:
                    self.disk.aim_ranges(self.journal)
                self.disk.arm(self.ledger, self.stack)
                self.armed = True
            except Exception as exc:  # said as the cell's note; the cell is then not run
                self.error = f"the fault could not be armed: {type(exc).__name__}: {exc}"[:300]

    def stop(self) -> None:
        with self.lock:
            self.done = True


class ProgramCell:
    """The parts of one cell of the user's command, in order (see the module's text)."""

    def __init__(self, config: FsConfig, spec: WorkloadSpec, fault: FaultPlan, base: Path, ledger: Ledger,
                 workdir: Path, limit_s: float) -> None:
        self.config, self.fault, self.base, self.ledger, self.limit_s = config, fault, base, ledger, limit_s
        timed = replace(spec, settings=tuple({**dict(spec.settings), "timeout": limit_s}.items()))
        self.program = Program(timed, workdir)
        self.notes: list[str] = []
        self.journal: list[tuple[int, int]] = []
        self.failed = ""  # what the command's failure said
        self.told_at: int | None = None

    def run_through(self, disk: FaultyDisk, datadir: Path, endpoint: Endpoint | None, stack: ExitStack,
                    duration: float) -> oc.Ended:
        """The command runs with the fault armed at its moment: MEASURED when it ended in time (with or without an
        error), HUNG when it did not, NOT_RUN when it ended before the fault was armed."""
        aimed = self.fault.kind.journal_ranges(self.journal) if self.journal else []
        arming = Arming(disk, self.ledger, stack, aimed)
        timer = threading.Timer(self.fault.arm_after_s, arming.arm)
        timer.daemon = True
        t0 = time.monotonic()
        timer.start()
        try:
            self.program.run(datadir, endpoint, self.base, duration, self.fault.seed)
        except CommandFailed as exc:
            self.failed, self.told_at = exc.one_line()[:300], time.monotonic_ns()
        finally:
            timer.cancel()
            arming.stop()
            disk.disarm()
        self.notes += self.program.notes()
        if arming.error:
            self.notes.append(arming.error)
        if not arming.armed:
            self.notes.append("your command ended before the fault was armed")
            return oc.Ended.NOT_RUN
        if self.failed and time.monotonic() - t0 >= self.limit_s:
            self.notes.append(f"your command was still running after {self.limit_s:.0f} s and was ended")
            return oc.Ended.HUNG
        return oc.Ended.MEASURED

    def behaviour(self, kernel: KernelLog, mountpoint: str, endpoint: Endpoint | None) -> oc.Behaviour:
        return behaviour_of(kernel, mountpoint, endpoint, [self.failed] if self.failed else [], oc.NO_SERVER)

    def truth(self, image: Path) -> oc.Truth:
        """Mounted again on a new loop device (journal replay), its server started (recovery), the user's check run
        with every acknowledged line; fsck after unmounting."""
        return truth_after(image, self.base, self.ledger, self.config, self.checked)

    def checked(self, datadir: Path) -> oc.Truth:
        try:
            with self.program.server(datadir, self.ledger, self.base / "run", False) as endpoint:
                _, ran, _, problem = self.program.check(datadir, endpoint, self.base, {}, NEVER)
        except PickfsError as exc:
            return oc.Truth(False, problem=f"its server would not start: {exc.one_line()}"[:400])
        return oc.Truth(True, own_check="ok" if ran else (problem or "your check failed"))


def program_cell(config: FsConfig, spec: WorkloadSpec, fault: FaultPlan, workdir: Path, ledger: Ledger,
                 size: int = 512 * 1024**2, duration: float = 4.0, limit_s: float = 120.0,
                 progress: Callable[[str], None] = lambda s: None) -> oc.FaultCell:
    """Run one cell of the user's command; everything it made undone before it returns (in the ledger first)."""
    t0 = time.monotonic()
    name, settings = spec.label, settings_text(spec)
    reason = fault_unavailable(config, spec, fault)  # as fault_cell: a cell this fault cannot reach is not run
    if reason:
        return oc.FaultCell(config.name, name, settings, fault.kind.name, fault.text, oc.Ended.NOT_RUN, notes=(reason,))
    base = workdir / "faults" / uuid.uuid4().hex[:12]
    with holding(ledger, "dir", path=str(base), recursive=True):
        base.mkdir(mode=0o711, parents=True)
        cell = ProgramCell(config, spec, fault, base, ledger, workdir, duration + limit_s)
        with faulty_disk(base, size, ledger, fault) as disk:
            cell.notes += disk.notes()
            ended, stopped = oc.Ended.NOT_RUN, ""
            behaviour: oc.Behaviour | None = None
            with provision(config, Target(kind="image", workdir=str(base), size_bytes=size), ledger,
                           image=disk.image) as prov:
                device = prov.info.device or ""
                kernel = KernelLog(Path(device).name)
                try:
                    with ExitStack() as armed:
                        try:
                            with cell.program.server(prov.datadir, ledger, base / "run", True) as endpoint:
                                cell.program.load(prov.datadir, endpoint)
                                os.sync()
                                cell.journal, why = find_journal(config.fstype, device) if fault.kind.of_filesystem \
                                    else ([], None)
                                if why:
                                    cell.notes.append(why)
                                else:
                                    progress(f"{config.name}, {name}: your command runs; the fault is armed in "
                                             f"{fault.arm_after_s:.2f} s")
                                    ended = cell.run_through(disk, prov.datadir, endpoint, armed, duration)
                                    behaviour = cell.behaviour(kernel, prov.info.mountpoint, endpoint)
                        except (PickfsError, CommandFailed) as exc:  # a server that cannot stop cleanly
                            stopped = exc.one_line()[:300]
                finally:
                    kernel.close()
                disk.disarm()
            if ended is oc.Ended.NOT_RUN and not stopped:
                return oc.FaultCell(config.name, name, settings, fault.kind.name, fault.text, oc.Ended.NOT_RUN,
                                    notes=tuple(cell.notes), seconds=time.monotonic() - t0)
            if stopped and behaviour is None:
                raise PickfsError(f"the cell failed before its fault: {stopped}", "see the message")
            if stopped:
                cell.notes.append(f"stopping the server: {stopped}")
            truth = cell.truth(disk.image)
            injected = disk.failures()
        acks = len(arrivals(base / "acks.log"))  # the acknowledged lines the check was handed
    bad = "" if truth.own_check == "ok" else truth.own_check
    counts = oc.Counts(acks, 0, 0, 1 if cell.failed else 0, 0, "", bad)
    told = (cell.told_at - injected[0]) / 1e9 if cell.told_at is not None and injected and \
        cell.told_at >= injected[0] else None
    return oc.FaultCell(config.name, name, settings, fault.kind.name, fault.text, ended, injected=len(injected),
                        counts=counts, behaviour=behaviour, truth=truth, first_error=cell.failed, told_after_s=told,
                        judged=True, notes=tuple(cell.notes), seconds=time.monotonic() - t0)
