"""A new filesystem type, registered only where docs/extending.md says (tests/dummy_fs.py), is really built:
mkfs, mount, its journal's counters read, its free space counted, its own fsck run; nothing left behind."""

from __future__ import annotations

import os

from pickfs.crash.runner import fsck
from pickfs.model import Target
from pickfs.monitors.sampler import cell_scope, read_journal
from pickfs.stack.aging import free_extents
from pickfs.stack.filesystems import unavailable_reason
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision
from tests.conftest import loops_under, mounts_under, needs_root
from tests.dummy_fs import NAME, registered

pytestmark = needs_root


def test_the_dummy_type_is_made_mounted_measured_checked_and_undone(workdir, monkeypatch):
    with registered(monkeypatch) as preset:
        assert unavailable_reason(NAME) is None
        ledger = Ledger(workdir / "ledger")
        target = Target(kind="image", workdir=str(workdir), size_bytes=128 * 1024**2)
        with provision(preset, target, ledger, quiet_s=0.2) as prov:
            assert mounts_under(workdir) == [prov.info.mountpoint] and prov.info.fstype == "ext4"
            assert prov.info.notes == ()  # mounted as what its driver calls it: no "mounted as ext4" note
            assert prov.disk and prov.info.device
            (prov.datadir / "probe").write_bytes(b"x" * 1024**2)
            os.sync()
            journal = read_journal(prov.disk, NAME, prov.info.mountpoint)
            assert journal is not None and journal[0] == "jbd2 (ext4 journal)" and journal[1] > 0
            # as the engine reads it: by what the kernel says is mounted
            scope = cell_scope(prov.disk, prov.info.fstype)
            assert read_journal(prov.disk, scope.fstype, prov.info.mountpoint) is not None
            assert (free_extents(NAME, prov.info.device, prov.datadir.parent) or 0) >= 1
            ok, said = fsck(NAME, prov.info.device)  # its own check (e2fsck -fn), read-only on the mounted device
            assert ok is not None and "files" in said and not said.startswith("e2fsck 1.")
            assert {e.kind for e in ledger.entries()} >= {"image", "loop", "mount", "dir"}
        assert mounts_under(workdir) == [] and loops_under(workdir) == []
        assert ledger.entries() == [] and not list(workdir.glob("images/*.img"))
