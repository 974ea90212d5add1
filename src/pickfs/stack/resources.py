"""Kinds of resource the ledger records: each says, together, when pickfs refuses to undo one and how it undoes it.

A `ResourceKind` is defined beside the code that makes such resources (mounts, loop devices and
images in stack/cleanup.py, memory-limited groups in stack/cgroups.py, a started program's group in
stack/tracking.py); stack/cleanup.py gathers them all in `KINDS`, the registry `pickfs cleanup`
reads a ledger with. `held` records a resource of a kind before it is made and undoes it on exit;
it needs only the kind in hand, so a module that defines a kind imports nothing that gathers them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pickfs.errors import NotUndone
from pickfs.stack.ledger import Entry, Ledger
from pickfs.stack.signals import shielded


@dataclass(frozen=True)
class ResourceKind:
    name: str  # as written in each ledger entry
    # why pickfs cannot prove it made what an entry of this kind names (given the ledger's work directory);
    # None when it may undo it
    refusal: Callable[[Entry, Path], str | None]
    undo: Callable[[Entry], None]  # idempotent: undoing what is already gone does nothing


def settle(ledger: Ledger, kind: ResourceKind, entry: Entry) -> None:
    """Undo one entry of `kind` and release it; NotUndone (entry kept) when pickfs cannot prove it made it."""
    reason = kind.refusal(entry, ledger.workdir)
    if reason:
        raise NotUndone(f"{entry.kind} left alone: {reason}",
                        f"check it, then delete {ledger.directory / (entry.id + '.json')}")
    kind.undo(entry)
    ledger.release(entry)


@contextmanager
def held(ledger: Ledger, kind: ResourceKind, **fields: Any) -> Iterator[list[Entry]]:
    """Record a resource before it is created; undo it on exit, whatever happened.

    The body creates the resource; it may replace the entry (ledger.update) through the
    yielded one-element list so that later fields (a loop device's name) are kept.
    """
    box = [ledger.record(kind.name, **fields)]
    try:
        yield box
    finally:
        with shielded():
            settle(ledger, kind, box[0])
