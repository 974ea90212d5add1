"""A fault run as data: each cell as the JSON document `pickfs.faults/1` (the `--json` export, and what the results
database keeps of each cell as a trial of the phase "fault"), and read back, every field checked (pure).

    {"schema": "pickfs.faults/1", "faults": {"model": ..., "plans": [...], "run": {...} (stored runs),
     "cells": [{"config", "database", "settings", "fault", "plan", "outcome", "injected", "counts", "behaviour",
                "truth": {..., "present": N, "present_ranges": [[first, last], ...]}, "first_error", "told_after_s",
                "write_back_errors", "write_back_ok_after_error", "judged", "notes", "seconds", "verdict"}]}}

`judged` is true for a cell of the user's own command: its check, given the acknowledged lines, judged what is
there (which of them were lost cannot be told).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from pickfs.faults.outcome import Behaviour, Counts, Ended, FaultCell, Truth, verdict
from pickfs.model import Phase, RunRecord, Trial

SCHEMA = "pickfs.faults/1"
PHASE: Phase = "fault"
MODEL = ("the disk fails the requests the fault plan names with an I/O error (EIO), which the loop device passes "
         "up as a failed write or a failed flush; every other write and flush succeeds and reaches the image "
         "(the host does not lose power); after the run the filesystem is unmounted, its loop device detached, "
         "and it is mounted again on a new one (journal replay) and the database started on it (its recovery)")
MOST_PRESENT = 100_000_000  # commits a stored cell may claim present (a damaged range claims no more)


class Damaged(ValueError):
    """A stored fault cell that is not what pickfs writes."""


def ranges(numbers: Iterable[int]) -> list[list[int]]:
    """Numbers as [first, last] runs of consecutive ones, in order (pure)."""
    out: list[list[int]] = []
    for n in sorted(set(numbers)):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def from_ranges(value: Any) -> frozenset[int]:
    """[first, last] runs read back, checked (Damaged)."""
    if not isinstance(value, list) or not all(
            isinstance(r, list) and len(r) == 2 and all(_int(x) for x in r) and 0 <= r[0] <= r[1] for r in value):
        raise Damaged("its commits present are not [first, last] ranges")
    if sum(b - a + 1 for a, b in value) > MOST_PRESENT:
        raise Damaged("its commits present are more than any cell commits")
    return frozenset(n for a, b in value for n in range(a, b + 1))


def cell_doc(cell: FaultCell) -> dict[str, Any]:
    """One cell as JSON data: what the reports show, the commits present counted and as ranges."""
    doc = asdict(cell)
    doc["outcome"] = cell.outcome.value
    if cell.truth is not None:
        doc["truth"]["present"] = len(cell.truth.present)
        doc["truth"]["present_ranges"] = ranges(cell.truth.present)
    doc["verdict"] = verdict(cell)
    return doc


def notes(cells: Iterable[FaultCell]) -> list[str]:
    """What the cells noted, each once, in order (the recorder's refusals are the same in every cell)."""
    return list(dict.fromkeys(n for c in cells for n in c.notes))


def matrix_doc(cells: list[FaultCell], plans: list[str], run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole fault run as the `pickfs.faults/1` document."""
    body: dict[str, Any] = {"model": MODEL, "plans": plans}
    if run is not None:
        body["run"] = run
    body["cells"] = [cell_doc(c) for c in cells]
    return {"schema": SCHEMA, "faults": body}


def matrix_json(cells: list[FaultCell], plans: list[str], run: dict[str, Any] | None = None) -> str:
    return json.dumps(matrix_doc(cells, plans, run), indent=1) + "\n"


# -- read back, checked -----------------------------------------------------------------------------------------
def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _table(d: Any, what: str) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise Damaged(f"its {what} is not a table")
    return d


def _text(d: dict[str, Any], key: str, what: str) -> str:
    v = d.get(key, "")
    if not isinstance(v, str):
        raise Damaged(f"its {what}'s {key} is not text")
    return v


def _count(d: dict[str, Any], key: str, what: str) -> int:
    v = d.get(key, 0)
    if not _int(v) or v < 0:
        raise Damaged(f"its {what}'s {key} is not a count")
    return int(v)


def _texts(d: dict[str, Any], key: str, what: str) -> tuple[str, ...]:
    v = d.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise Damaged(f"its {what}'s {key} is not a list of text")
    return tuple(v)


def _ints(d: dict[str, Any], key: str, what: str) -> tuple[int, ...]:
    v = d.get(key, [])
    if not isinstance(v, list) or not all(_int(x) for x in v):
        raise Damaged(f"its {what}'s {key} is not a list of numbers")
    return tuple(v)


def _counts(value: Any) -> Counts | None:
    if value is None:
        return None
    d = _table(value, "counts")
    n = {k: _count(d, k, "counts") for k in ("acked", "acked_present", "acked_lost", "failed", "false_failures")}
    return Counts(acked=n["acked"], acked_present=n["acked_present"], acked_lost=n["acked_lost"], failed=n["failed"],
                  false_failures=n["false_failures"], old_value=_text(d, "old_value", "counts"),
                  corruption=_text(d, "corruption", "counts"), lost_ids=_ints(d, "lost_ids", "counts"),
                  false_ids=_ints(d, "false_ids", "counts"))


def _behaviour(value: Any) -> Behaviour | None:
    if value is None:
        return None
    d = _table(value, "behaviour")
    return Behaviour(_text(d, "server", "behaviour"), _text(d, "filesystem", "behaviour"),
                     _texts(d, "kernel", "behaviour"), _texts(d, "server_log", "behaviour"))


def _truth(value: Any) -> Truth | None:
    if value is None:
        return None
    d = _table(value, "truth")
    newest, fsck_ok = d.get("newest"), d.get("fsck_ok")
    if not isinstance(d.get("came_up"), bool) or not (newest is None or _int(newest)) or \
            not (fsck_ok is None or isinstance(fsck_ok, bool)):
        raise Damaged("its truth's came_up, newest or fsck_ok is not what pickfs writes")
    present = from_ranges(d.get("present_ranges", []))
    if _count(d, "present", "truth") != len(present):
        raise Damaged("its truth's count of commits present disagrees with its ranges")
    return Truth(came_up=d["came_up"], present=present, newest=newest, own_check=_text(d, "own_check", "truth"),
                 invariant=_text(d, "invariant", "truth"), problem=_text(d, "problem", "truth"), fsck_ok=fsck_ok,
                 fsck_said=_text(d, "fsck_said", "truth"))


def cell_from_doc(value: Any) -> FaultCell:
    """A cell's document read back (Damaged when it is not what pickfs writes); the verdict is said again from it."""
    d = _table(value, "cell")
    outcomes = {e.value: e for e in Ended}
    if d.get("outcome") not in outcomes:
        raise Damaged(f"its outcome is none of {', '.join(outcomes)}")
    told, seconds, then_ok = d.get("told_after_s"), d.get("seconds", 0.0), d.get("write_back_ok_after_error", False)
    if not (told is None or _num(told)) or not _num(seconds):
        raise Damaged("its times are not numbers")
    judged = d.get("judged", False)
    if not isinstance(then_ok, bool) or not isinstance(judged, bool):
        raise Damaged("its write_back_ok_after_error or judged is not true or false")
    return FaultCell(config=_text(d, "config", "cell"), database=_text(d, "database", "cell"),
                     settings=_text(d, "settings", "cell"), fault=_text(d, "fault", "cell"),
                     plan=_text(d, "plan", "cell"), outcome=outcomes[d["outcome"]],
                     injected=_count(d, "injected", "cell"), counts=_counts(d.get("counts")),
                     behaviour=_behaviour(d.get("behaviour")), truth=_truth(d.get("truth")),
                     first_error=_text(d, "first_error", "cell"), told_after_s=None if told is None else float(told),
                     write_back_errors=_texts(d, "write_back_errors", "cell"), write_back_ok_after_error=then_ok,
                     judged=judged, traits=_texts(d, "traits", "cell"), notes=_texts(d, "notes", "cell"),
                     seconds=float(seconds))


# -- stored with a run ------------------------------------------------------------------------------------------
def cell_trial(run_id: str, cell_index: int, fault_index: int, cell: FaultCell, started: float) -> Trial:
    """A cell as its run's trial: the plan's cell (configuration x workload), the fault plan's place as the
    repetition, the cell's document as its raw output; a cell not run is a trial that failed, with why."""
    ran = cell.outcome is not Ended.NOT_RUN
    return Trial(run_id=run_id, cell_index=cell_index, repetition=fault_index, phase=PHASE, started=started,
                 elapsed_s=cell.seconds, ok=ran, raw_output=json.dumps(cell_doc(cell)), notes=cell.notes,
                 error="" if ran else f"not run: {'; '.join(cell.notes)}"[:500])


def is_fault_run(record: RunRecord) -> bool:
    """A run of `pickfs crashtest --fault`: its plan names the faults (nested in the method's `faults` part, or flat
    as `fault` in a run stored before the method was split by mode), or it holds fault cells."""
    method = record.plan.get("method")
    part = method.get("faults") if isinstance(method, dict) else None
    named = (isinstance(part, dict) and part.get("kinds")) or (isinstance(method, dict) and method.get("fault"))
    return bool(named) or any(t.phase == PHASE for t in record.trials)


def stored_cells(record: RunRecord) -> list[FaultCell]:
    """The run's fault cells in the order they ended (Damaged names the first that is not what pickfs writes)."""
    out = []
    for t in record.trials:
        if t.phase != PHASE:
            continue
        try:
            out.append(cell_from_doc(json.loads(t.raw_output)))
        except (ValueError, RecursionError) as exc:
            raise Damaged(f"fault cell {len(out) + 1}: {exc}") from None
    return out


def plans_of(cells: Iterable[FaultCell]) -> list[str]:
    """The fault plans of cells, in words, as they state them (each once, in order)."""
    return list(dict.fromkeys(c.plan for c in cells))


def run_facts(record: RunRecord) -> dict[str, Any]:
    """What the documents say of the stored run: its id, status, start (UTC) and the machine."""
    host = record.host
    return {"id": record.id, "status": record.status,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created)),
            "host": {k: host.get(k) for k in ("name", "os", "kernel", "arch", "cpus", "memory_bytes")
                     if isinstance(host.get(k), (str, int))}}
