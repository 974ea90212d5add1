"""A fault matrix in words, in rows and as JSON (pure)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from pickfs.faults.outcome import Ended, FaultCell, verdict

MODEL = ("the disk fails the requests the fault plan names with an I/O error (EIO), which the loop device passes "
         "up as a failed write or a failed flush; every other write and flush succeeds and reaches the image "
         "(the host does not lose power); after the run the filesystem is unmounted, its loop device detached, "
         "and it is mounted again on a new one (journal replay) and the database started on it (its recovery)")
COLUMNS = ("configuration", "database", "fault", "acknowledged", "lost", "errors to client", "false failures",
           "server", "filesystem", "after restart")


def row(cell: FaultCell) -> tuple[str, ...]:
    """One cell as the table's row."""
    db = f"{cell.database} ({cell.settings})" if cell.settings else cell.database
    c, b, t = cell.counts, cell.behaviour, cell.truth
    if c is None or t is None:
        return (cell.config, db, cell.fault, "", "", "", "", "", "", cell.outcome.value)
    after = "did not come up" if not t.came_up else ("corrupt" if c.corruption else "came up")
    return (cell.config, db, cell.fault, f"{c.acked:,}", f"{c.acked_lost:,}", f"{c.failed:,}",
            f"{c.false_failures:,}", b.server.split(":")[0].split(" (")[0] if b else "", b.filesystem if b else "",
            after if cell.outcome is Ended.MEASURED else f"{cell.outcome.value}; {after}")


def notes(cells: list[FaultCell]) -> list[str]:
    """What the cells noted, each once, in order (the recorder's refusals are the same in every cell)."""
    return list(dict.fromkeys(n for c in cells for n in c.notes))


def cell_doc(cell: FaultCell) -> dict[str, Any]:
    """One cell as JSON data: what the report shows, the commits present counted (not listed)."""
    doc = asdict(cell)
    doc["outcome"] = cell.outcome.value
    if cell.truth is not None:
        doc["truth"]["present"] = len(cell.truth.present)
    doc["verdict"] = verdict(cell)
    return doc


def matrix_json(cells: list[FaultCell]) -> str:
    return json.dumps({"faults": {"model": MODEL, "cells": [cell_doc(c) for c in cells]}}, indent=1) + "\n"
