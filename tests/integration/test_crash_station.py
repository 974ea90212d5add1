"""A checker's station keeps one loop device for all its states: each state must still read its own image, never
what the kernel cached of the state before it (the working image is reset under the device between them)."""

import subprocess
from contextlib import ExitStack

import pytest

from pickfs.crash.runner import Workbench
from pickfs.crash.session import fuse_unavailable, recording
from pickfs.crash.station import Station
from pickfs.plan import resolve_fs_name
from pickfs.stack.blockdev import loops_backed_by
from pickfs.stack.ledger import Ledger
from tests.conftest import ledger_entries, needs_root

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]


def test_one_loop_device_for_all_states_and_each_state_reads_its_own_image(workdir):
    ledger = Ledger(workdir / "ledger")
    size = 256 * 1024**2
    start = workdir / "start.img"
    with open(start, "wb") as fh:
        fh.truncate(size)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(start)], check=True)
    working = workdir / "working.img"
    subprocess.run(["cp", "--sparse=always", str(start), str(working)], check=True)
    config = resolve_fs_name("ext4")
    devices, seen = [], []
    with recording(workdir / "checks", size, ledger, image=working) as served, ExitStack() as stack:
        bench = Workbench(served.log, [], start, 0, served)
        station = Station(stack, ledger, config, served.image, workdir / "station")
        for k in range(3):
            with station.attached() as device, station.mounted(device) as refused:
                assert not refused, refused
                devices.append(device)
                seen.append(sorted(p.name for p in station.mountpoint.iterdir() if p.name != "lost+found"))
                # the state's check writes: a file and its directory entry, in blocks the kernel caches
                (station.mountpoint / f"written-by-state-{k}").write_bytes(b"x" * 65536)
            bench.checked()
            bench.reset()  # the working image back to the start image, under the same device
        assert loops_backed_by(served.image) == [devices[0]]  # kept while the station stands
    # every state saw the start image: none the file the one before it wrote (without dropping the device's cached
    # blocks, the second state listed 'written-by-state-0')
    assert seen == [[], [], []]
    assert len(set(devices)) == 1
    assert loops_backed_by(served.image) == []
    assert ledger_entries(workdir) == []
