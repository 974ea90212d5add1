"""A checker's station keeps one loop device for all its states: each state must still read its own image, never
what the kernel cached of the state before it (the working image is reset under the device between them)."""

import os
import subprocess
import time
from contextlib import ExitStack

import pytest

from pickfs.crash.runner import Workbench, fsck
from pickfs.crash.session import fuse_unavailable, recording
from pickfs.crash.station import Station, namespaces_holding
from pickfs.plan import resolve_fs_name
from pickfs.stack.blockdev import loops_backed_by
from pickfs.stack.ledger import Ledger
from tests.conftest import ledger_entries, needs_root

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]


SIZE = 256 * 1024**2


def images(workdir):
    """A fresh ext4 start image and a working copy of it (sparse), as a crash test's workbench holds them."""
    start = workdir / "start.img"
    with open(start, "wb") as fh:
        fh.truncate(SIZE)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(start)], check=True)
    working = workdir / "working.img"
    subprocess.run(["cp", "--sparse=always", str(start), str(working)], check=True)
    return start, working


def test_one_loop_device_for_all_states_and_each_state_reads_its_own_image(workdir):
    ledger, (start, working) = Ledger(workdir / "ledger"), images(workdir)
    config = resolve_fs_name("ext4")
    devices, seen = [], []
    with recording(workdir / "checks", SIZE, ledger, image=working) as served, ExitStack() as stack:
        bench = Workbench(served.log, [], start, 0, served)
        station = Station(stack, ledger, config, served.image, workdir / "station")
        probe = -1
        for k in range(3):
            with station.attached() as device:
                with station.mounted(device) as refused:
                    if probe < 0:  # another opener of the device (a probe), so its last close never drops its cache
                        probe = os.open(device, os.O_RDONLY)
                        stack.callback(os.close, probe)
                    assert not refused, refused
                    devices.append(device)
                    seen.append(sorted(p.name for p in station.mountpoint.iterdir() if p.name != "lost+found"))
                    # the state's check writes: a file and its directory entry, in blocks the kernel caches
                    (station.mountpoint / f"written-by-state-{k}").write_bytes(b"x" * 65536)
                assert station.let_go(device) == ""  # as a check does: another namespace may have copied the mount
            bench.checked()
            bench.reset()  # the working image back to the start image, under the same device
        assert loops_backed_by(served.image) == [devices[0]]  # kept while the station stands
    # every state saw the start image: none the file the one before it wrote, though a probe kept the device's cache
    # alive past the last close (an ext4 mount drops it itself when it sets its block size; fsck would not)
    assert seen == [[], [], []]
    assert len(set(devices)) == 1
    assert loops_backed_by(served.image) == []
    assert ledger_entries(workdir) == []


def test_a_copy_of_a_states_mount_in_another_namespace_is_unmounted_there_and_fsck_reads_a_finished_filesystem(
        workdir):
    """A mount namespace made while a state was mounted (unshare --mount, ip netns exec) kept its filesystem alive
    after the unmount: fsck read it half written (a verdict the one-at-a-time check did not give), and the device
    stayed held for as long as that namespace lived."""
    ledger, (_, working) = Ledger(workdir / "ledger"), images(workdir)
    config = resolve_fs_name("ext4")
    with recording(workdir / "checks", SIZE, ledger, image=working) as served, ExitStack() as stack:
        station = Station(stack, ledger, config, served.image, workdir / "station")
        other = None
        try:
            with station.attached() as device:
                with station.mounted(device) as refused:
                    assert not refused, refused
                    (station.mountpoint / "f").write_bytes(b"x" * 65536)
                    # another program makes a mount namespace now: it copies every mount, this one too
                    other = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "60"])
                    for _ in range(100):
                        if namespaces_holding(device):
                            break
                        time.sleep(0.05)
                    assert other.pid in namespaces_holding(device)  # (a service with its own namespace may hold it too)
                t0 = time.monotonic()
                assert station.let_go(device) == ""
                assert time.monotonic() - t0 < 5  # not the namespace's 60 s, nor the 10 s wait
                assert other.poll() is None  # the other program goes on, without the copy
                assert namespaces_holding(device) == []
                clean, said = fsck("ext4", device)
                assert clean, said
        finally:
            if other is not None:
                other.kill()
                other.wait()
    assert ledger_entries(workdir) == []
