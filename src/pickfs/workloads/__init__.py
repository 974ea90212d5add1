"""Workloads, registered by name."""

from __future__ import annotations

from pickfs.errors import PlanError
from pickfs.workloads.base import Workload
from pickfs.workloads.command import Command
from pickfs.workloads.filetree import BigFiles, MediumFiles, SmallFiles, Tree
from pickfs.workloads.fio import Fileio, FileioFirstTouch, Wal
from pickfs.workloads.firebird_tpcb import FirebirdTpcb
from pickfs.workloads.pgbench import Pgbench
from pickfs.workloads.sqlite_tpcb import SqliteTpcb
from pickfs.workloads.sysbench_oltp import SysbenchOltp
from pickfs.workloads.tpcc import Tpcc

REGISTRY: dict[str, type[Workload]] = {cls.name: cls for cls in (
    SqliteTpcb, Pgbench, SysbenchOltp, Tpcc, FirebirdTpcb, Fileio, FileioFirstTouch, Wal, Tree, SmallFiles,
    MediumFiles, BigFiles, Command)}
DEFAULT_WORKLOAD = SqliteTpcb.name


def workload_class(name: str) -> type[Workload]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise PlanError(f"unknown workload {name!r}", f"valid workloads: {', '.join(sorted(REGISTRY))}") from None
