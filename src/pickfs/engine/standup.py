"""Stand one configuration up for a workload: its filesystem, its server, its data laid out
(timed and saved as the `prepare` trial, never counted). Shared by both methods."""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pickfs.model import Cell, Plan, Trial
from pickfs.services import service_class
from pickfs.services.base import Endpoint
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import Provisioned, provision, space_used
from pickfs.store import ResultStore
from pickfs.workloads import workload_class
from pickfs.workloads.base import Workload


@dataclass(frozen=True)
class Standing:
    prov: Provisioned
    endpoint: Endpoint | None
    workload: Workload
    mount: dict[str, Any]  # what was really built, kept with every trial


def stand_up(stack: ExitStack, plan: Plan, ledger: Ledger, store: ResultStore, run_id: str, cell: Cell,
             repetition: int = 0, block: int = 0, expect_bytes: int | None = None) -> Standing:
    """Provision, start the server, prepare; every resource on `stack`. The prepare trial is saved."""
    m = plan.method
    cls = workload_class(cell.workload.name)
    wl = cls(Path(plan.target.workdir) / "data")
    prov = stack.enter_context(provision(cell.config, plan.target, ledger, m.quiesce_seconds, m.quiesce_timeout,
                                         expect_bytes=expect_bytes))
    endpoint = None
    service_name = cls.service_for(cell.workload)
    if service_name:
        endpoint = stack.enter_context(service_class(service_name).start(
            prov.datadir, cls.service_settings(cell.workload), ledger, Path(plan.target.workdir) / "run"))
    mount = prov.info.as_dict()
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
    store.save_trial(Trial(run_id=run_id, cell_index=cell.index, repetition=repetition, phase="prepare",
                           started=started, elapsed_s=prep_s, ok=True, metrics=prep_metrics, raw_output=prep.text,
                           mount=mount, notes=prov.info.notes, block=block))
    return Standing(prov, endpoint, wl, mount)
