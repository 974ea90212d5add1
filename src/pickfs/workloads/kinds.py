"""What kind of work a workload is, declared by the workload itself (pure data).

A kind says what the workload's figures mean and how a report shows them: `shown_as` is recorded
with the run (the report reads it there, importing no workload) and picks the charts: a safety
chart where commits are acknowledged ("database"), phases and the device's view for file trees
("file tree"), neither for other I/O ("other").
"""

from __future__ import annotations

from dataclasses import dataclass

# How reports name and chart a kind (analysis/views.py reads these words from the run).
SHOWN_AS = ("database", "file tree", "other")


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    shown_as: str  # one of SHOWN_AS
    commits: bool  # the work acknowledges commits (a power cut can lose acknowledged ones)

    def __post_init__(self) -> None:
        if self.shown_as not in SHOWN_AS:
            raise ValueError(f"workload kind {self.name!r}: shown_as must be one of {', '.join(SHOWN_AS)}")


DATABASE_TRANSACTIONS = WorkloadKind("database transactions", "database", commits=True)
FILE_TREE = WorkloadKind("file tree", "file tree", commits=False)
RAW_IO = WorkloadKind("raw I/O", "other", commits=False)
USER_COMMAND = WorkloadKind("user command", "other", commits=False)
USER_COMMAND_ON_SERVER = WorkloadKind("user command on a database server", "database", commits=True)

KINDS: dict[str, WorkloadKind] = {k.name: k for k in (
    DATABASE_TRANSACTIONS, FILE_TREE, RAW_IO, USER_COMMAND, USER_COMMAND_ON_SERVER)}
