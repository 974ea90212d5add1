"""The host disk under the work directory fills up while a crash test runs (a real ext4 on a loop device, filled
by another process at moments through the recording and the building of the states' images): pickfs says so in
one line, the run ends failed or complete, never an internal error, and `pickfs cleanup` leaves nothing."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import IS_ROOT, pickfs, start_pickfs


@pytest.fixture(autouse=True)
def _root():
    if not IS_ROOT:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("needs root: mount")


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 3 GiB ext4 on a loop device (room for a crash test's images, and soon filled), unmounted afterwards."""
    image, mp = tmp_path / "host.img", tmp_path / "host"
    mp.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(3 * 1024**3)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mp)], check=True)
    try:
        yield mp
    finally:
        subprocess.run(["umount", str(mp)], check=False)


def fill(path: Path) -> None:
    st = os.statvfs(path)
    subprocess.run(["fallocate", "-l", str(max(st.f_bavail * st.f_frsize - 4096, 4096)), str(path / "filler")],
                   check=False)


def leftovers(workdir: Path) -> tuple[list[str], list[str]]:
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(workdir) in line]
    loops = [line for line in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines()
             if str(workdir) in line]
    return mounts, loops


@pytest.mark.parametrize("fill_after", [4.0, 6.0, 8.0])
def test_a_disk_that_fills_during_a_crash_test_is_said_in_one_line(small_disk: Path, fill_after: float):
    workdir = small_disk / "w"
    proc = start_pickfs(workdir, "crashtest", "--fs", "ext4", "--workload", "sqlite-tpcb", "--states", "12",
                        "--workdir", str(workdir))
    time.sleep(fill_after)
    fill(small_disk)
    out, err = proc.communicate(timeout=600)
    text = out + err
    assert "internal error" not in text and "Traceback" not in text, text[-3000:]
    assert proc.returncode in (0, 1), text[-3000:]
    (small_disk / "filler").unlink(missing_ok=True)
    done = pickfs(workdir, "cleanup", "--workdir", str(workdir))
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 60
    while leftovers(workdir) != ([], []) and time.monotonic() < deadline:
        time.sleep(1)
    assert leftovers(workdir) == ([], [])
