"""kill -9 of pickfs while it works in a directory of its own outside the work directory (the client's ceiling
measured in /dev/shm before a fixed-rate run or a capacity search), then `pickfs cleanup`: the directory is gone.
"""

import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import mounts_under, needs_root, pickfs, start_pickfs

pytestmark = needs_root

CEILING_DIR = re.compile(r"/dev/shm/pickfs-ceiling-[^/\s\x00]+")


def children_of(pid: int) -> list[int]:
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            ppid = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid:
            out.append(int(entry.name))
    return out


def ceiling_dirs_of(pid: int) -> tuple[set[str], list[int]]:
    """The /dev/shm ceiling directories the clients pickfs started work in (named on their command lines),
    and those clients; other runs on this machine make such directories too."""
    dirs, clients = set(), []
    for child in children_of(pid):
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        found = CEILING_DIR.findall(cmd)
        if found:
            dirs.update(found)
            clients.append(child)
    return dirs, clients


@pytest.mark.parametrize("how", [("--rate", "50/s"), ("--latency-target", "p99<=2s", "--rate", "20/s")],
                         ids=["fixed-rate", "latency-target"])
def test_kill_9_while_the_clients_ceiling_is_measured_leaves_nothing_in_dev_shm(workdir, how):
    proc = start_pickfs(workdir, "run", "--workload", "sqlite-tpcb", *how, "--fs", "ext4,xfs", "--blocks", "1",
                        "--rounds", "3", "--warmup", "0", "--size", "1G", "--slice", "1s")
    seen: set[str] = set()
    clients: list[int] = []
    t0 = time.monotonic()
    while not seen and time.monotonic() - t0 < 120 and proc.poll() is None:
        seen, clients = ceiling_dirs_of(proc.pid)
        time.sleep(0.02)
    assert seen, "the client's ceiling was never measured"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.communicate(timeout=30)
    for client in clients:  # the client, orphaned, ends its two-second slice (its parent's pipe is gone)
        for _ in range(300):
            if not Path(f"/proc/{client}").exists():
                break
            time.sleep(0.1)
    assert all(Path(d).is_dir() for d in seen), seen  # the kill left it: cleanup has work to do
    r = pickfs(workdir, "cleanup", timeout=300)
    assert r.returncode == 0, r.stderr
    assert [d for d in seen if os.path.exists(d)] == [], r.stdout
    assert mounts_under(workdir) == []
    assert list((workdir / "ledger").glob("*.json")) == []
