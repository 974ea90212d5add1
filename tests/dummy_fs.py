"""A dummy filesystem type, registered where docs/extending.md says a new type goes and nowhere else:
its `FsType` in stack/filesystems.py (`KNOWN`) and a preset in stack/presets.py (`PRESETS`).

It is ext4 under a second name, with facts of its own (what mount and the kernel call it, its mkfs,
its fsck, its free-space tool, its journal), so a test that finds it everywhere proves the rest of
pickfs asks the type, not the name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pickfs.fsfacts import JBD2
from pickfs.model import FsConfig
from pickfs.stack.filesystems import KNOWN, FreeSpaceTool, Fsck, FsType, parse_e2freefrag
from pickfs.stack.presets import PRESETS

NAME = "dummyfs"
DUMMY = FsType(NAME, ("mkfs.ext4", "-F", "-q", "-L", "dummyfs"), "e2fsprogs", "ext4",
               steady=("-E", "lazy_itable_init=0,lazy_journal_init=0"), implicit=("barrier", "data=ordered"),
               driver="ext4", fsck=Fsck(("e2fsck", "-fn"), banner=("e2fsck 1.",)),
               free_space=FreeSpaceTool(("e2freefrag",), "e2fsprogs", parse_e2freefrag), journal=JBD2)
PRESET = FsConfig(NAME, NAME, description="ext4 under a second name (a test's dummy type)")


@contextmanager
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsConfig]:
    """The dummy type and its preset registered for the duration (the two places a new type goes)."""
    with monkeypatch.context() as m:
        m.setitem(KNOWN, NAME, DUMMY)
        m.setitem(PRESETS, NAME, PRESET)
        yield PRESET
