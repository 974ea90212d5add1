"""A dummy filesystem type, registered where docs/extending.md says a new type goes and nowhere else:
its `FsType` in stack/filesystems.py (`KNOWN`), its `FsFacts` in fsfacts.py (`FACTS`) and a preset in
stack/presets.py (`PRESETS`).

It is ext4 under a second name, with facts of its own (what mount and the kernel call it, its mkfs,
its fsck, its free-space tool, its journal; a legacy format checked at boot, a journal mkfs can leave
out, and a search space of its own), so a test that finds it everywhere proves the rest of pickfs asks
the type, not the name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pickfs.fsfacts import FACTS, JBD2, SCHEDULER_DIMENSION, Dimension, FsFacts, value
from pickfs.model import FsConfig
from pickfs.stack.filesystems import KNOWN, FreeSpaceTool, Fsck, FsType, parse_e2freefrag
from pickfs.stack.presets import PRESETS

NAME = "dummyfs"
DUMMY = FsType(NAME, ("mkfs.ext4", "-F", "-q", "-L", "dummyfs"), "e2fsprogs", "ext4",
               steady=("-E", "lazy_itable_init=0,lazy_journal_init=0"), implicit=("barrier", "data=ordered"),
               driver="ext4", fsck=Fsck(("e2fsck", "-fn"), banner=("e2fsck 1.",)),
               free_space=FreeSpaceTool(("e2freefrag",), "e2fsprogs", parse_e2freefrag), journal=JBD2)
# its own dimensions, none of ext4's: a search that covers them read them here
SPACE = (Dimension("dummy atime", (value(""), value("dummy-noatime", mount=("noatime",)))),
         Dimension("dummy commit", (value(""), value("dummy-commit15", mount=("commit=15",)))),
         SCHEDULER_DIMENSION)
FACTS_OF_DUMMY = FsFacts(legacy=True, fsck_pass=2, journal_off="^has_journal", search_space=SPACE)
PRESET = FsConfig(NAME, NAME, description="ext4 under a second name (a test's dummy type)")


@contextmanager
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsConfig]:
    """The dummy type, its facts and its preset registered for the duration (the three places a new type goes)."""
    with monkeypatch.context() as m:
        m.setitem(KNOWN, NAME, DUMMY)
        m.setitem(FACTS, NAME, FACTS_OF_DUMMY)
        m.setitem(PRESETS, NAME, PRESET)
        yield PRESET
