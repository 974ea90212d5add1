"""Stand one configuration up for a workload: its filesystem, its server, its data laid out
(timed and saved as the `prepare` trial, never counted). Shared by both methods."""

from __future__ import annotations

import os
import time
import uuid
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pickfs.model import Cell, Plan, Trial
from pickfs.services import service_class
from pickfs.services.base import Endpoint
from pickfs.stack.aging import fragmentation
from pickfs.stack.cgroups import MemoryGroup, memory_limited
from pickfs.stack.cleanup import holding
from pickfs.stack.filesystems import fs_type
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import Provisioned, provision, space_used
from pickfs.stack.workdir import PRIVATE_MODE, WORKDIR_MODE, private_dir
from pickfs.store import ResultStore
from pickfs.workloads import workload_class
from pickfs.workloads.base import Workload


@dataclass(frozen=True)
class Standing:
    prov: Provisioned
    endpoint: Endpoint | None
    workload: Workload
    mount: dict[str, Any]  # what was really built, kept with every trial
    group: MemoryGroup | None = None  # the production box's memory: the server and client run in it

    def limited(self) -> AbstractContextManager[Any]:
        """pickfs (and what it starts) inside the configuration's memory group, if it has one."""
        return self.group.joined() if self.group else nullcontext()


def scratch_dir(stack: ExitStack, ledger: Ledger, workdir: Path) -> Path:
    """A private directory under the work directory's run/ (ledger-tracked), removed with what is in it."""
    parent = private_dir(workdir / "run", WORKDIR_MODE)  # 0711: servers' users pass through to their sockets
    path = parent / f"scratch-{uuid.uuid4().hex[:12]}"
    stack.enter_context(holding(ledger, "dir", path=str(path), recursive=True))
    path.mkdir(mode=PRIVATE_MODE)
    return path


def follow_memory(settings: dict[str, Any], by_memory: dict[str, str], defaults: dict[str, Any]) -> tuple[
        dict[str, Any], list[str]]:
    """Server settings with the buffers a memory limit implies, where the workload left them at its default
    or unset (pure); and a note for each one changed."""
    out, notes = dict(settings), []
    for key, value in by_memory.items():
        if out.get(key) in (None, "") or out.get(key) == defaults.get(key):
            if out.get(key) != value:
                notes.append(f"{key} = {value}, following the memory limit (set {key} to choose another)")
            out[key] = value
    return out, notes


def data_against_memory(data_bytes: int, memory: int) -> str:
    """The report's line on the data's size against the memory (pure)."""
    gib = 1024**3
    return (f"data {data_bytes / gib:.2f} GiB against {memory / gib:.2f} GiB of memory "
            f"({data_bytes / memory:.1f}x: {'larger than' if data_bytes > memory else 'fits in'} memory)")


def stand_up(stack: ExitStack, plan: Plan, ledger: Ledger, store: ResultStore, run_id: str, cell: Cell,
             repetition: int = 0, block: int = 0, expect_bytes: int | None = None) -> Standing:
    """Provision, start the server, prepare; every resource on `stack`. The prepare trial is saved."""
    m = plan.method
    cls = workload_class(cell.workload.name)
    wl = cls(Path(plan.target.workdir) / "data")
    memory = plan.target.memory_bytes
    if cell.config.age and expect_bytes is not None:  # the aged files take their share of the image too
        expect_bytes = min(plan.target.size_bytes, expect_bytes + int(cell.config.age * plan.target.size_bytes))
    # the group first: it is removed last, once the server in it has stopped
    group = stack.enter_context(memory_limited(ledger, memory)) if memory else None
    prov = stack.enter_context(provision(cell.config, plan.target, ledger, m.quiesce_seconds, m.quiesce_timeout,
                                         expect_bytes=expect_bytes))
    if not fs_type(prov.info.fstype).mounts:  # no directory of its own for the workload's lock files: a scratch one
        wl.scratch = scratch_dir(stack, ledger, Path(plan.target.workdir))
    endpoint = None
    notes: list[str] = []
    service_name = cls.service_for(cell.workload)
    started = time.time()
    with group.joined() if group else nullcontext():
        if service_name:
            service = service_class(service_name)
            settings = cls.service_settings(cell.workload)
            if memory:
                settings, notes = follow_memory(settings, service.memory_settings(memory), cls.defaults)
            endpoint = stack.enter_context(service.start(prov.datadir, settings, ledger,
                                                         Path(plan.target.workdir) / "run"))
        started = time.time()
        prep = wl.prepare(cell.workload, prov.datadir, endpoint)
    prep_s = time.time() - started
    prep_metrics = {"prepare_s": prep_s}
    if prov.info.mountpoint:  # space used: after mkfs, and once the workload's data is in place
        os.sync()
        prep_metrics["space_mkfs_bytes"] = float(prov.info.space_used_bytes or 0)
        prep_metrics["space_prepared_bytes"] = float(space_used(prov.info.mountpoint))
        st = os.statvfs(prov.info.mountpoint)  # the filesystem's size and what is left for users (df)
        prep_metrics["space_size_bytes"] = float(st.f_blocks * st.f_frsize)
        prep_metrics["space_free_bytes"] = float(st.f_bavail * st.f_frsize)
    if prov.aging is not None:
        prep_metrics.update({"aging_s": prov.aging.seconds, "aging_fill": prov.aging.fill,
                             "aging_files": float(prov.aging.files), "aging_bytes_written": float(prov.aging.bytes_written)})
    if prov.disk and prov.info.mountpoint and not fs_type(cell.config.fstype).in_memory:
        frag = fragmentation(Path(prov.info.mountpoint), prov.datadir, cell.config.fstype, prov.info.device)
        prep_metrics.update(frag.metrics())
        if frag.describe():
            notes.append(frag.describe())
    if memory:
        data = int(prep_metrics["space_prepared_bytes"] - prep_metrics["space_mkfs_bytes"]) \
            if prov.info.mountpoint else (cls.space_needed(cell.workload) or 0)
        prep_metrics.update({"memory_limit_bytes": float(memory), "data_bytes": float(data)})
        notes.append(data_against_memory(data, memory))
    if notes:
        prov = replace(prov, info=replace(prov.info, notes=(*prov.info.notes, *notes)))
    mount = prov.info.as_dict()
    if group is not None:
        mount["memory_limit_bytes"] = memory
        mount["cgroup"] = f"v{group.version}"
    if prov.aging is not None:
        mount["aging"] = prov.aging.as_dict()
    store.save_trial(Trial(run_id=run_id, cell_index=cell.index, repetition=repetition, phase="prepare",
                           started=started, elapsed_s=prep_s, ok=True, metrics=prep_metrics, raw_output=prep.text,
                           mount=mount, notes=prov.info.notes, block=block))
    return Standing(prov, endpoint, wl, mount, group)
