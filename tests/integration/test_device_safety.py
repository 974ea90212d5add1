"""A device target is refused unless it is spare and confirmed; refused devices stay untouched."""

import hashlib
import subprocess
from pathlib import Path

import pytest

from pickfs.stack import blockdev
from tests.conftest import needs_root, pickfs

pytestmark = needs_root


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture
def spare(workdir):
    """A loop device on a 1 GiB image outside pickfs's control, standing in for a spare disk."""
    image = workdir / "spare.img"
    with open(image, "wb") as fh:
        fh.truncate(1024**3)
    dev = blockdev.attach_loop(image, direct_io=False)
    yield dev, image
    subprocess.run(["umount", dev], capture_output=True)
    blockdev.detach_loop(dev)


def test_device_with_a_filesystem_is_refused_and_unchanged(workdir, spare):
    dev, image = spare
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "precious", dev], check=True)
    subprocess.run(["sync"])
    before = digest(image)
    r = pickfs(workdir, "run", "--target", "device", "--device", dev, "--fs", "ext4", "--blocks", "1", "--runs", "1")
    assert r.returncode != 0
    assert "ext4 signature (label precious)" in r.stderr
    assert f"--confirm-device {dev}" in r.stderr and "Traceback" not in r.stderr
    # the wrong confirmation is no confirmation
    r = pickfs(workdir, "run", "--device", dev, "--confirm-device", "/dev/loop999", "--fs", "ext4")
    assert r.returncode != 0
    subprocess.run(["sync"])
    assert digest(image) == before


def test_mounted_device_is_refused_even_when_confirmed(workdir, spare):
    dev, _ = spare
    subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
    mnt = workdir / "m"
    mnt.mkdir()
    subprocess.run(["mount", dev, str(mnt)], check=True)
    try:
        r = pickfs(workdir, "run", "--device", dev, "--confirm-device", dev, "--fs", "ext4")
        assert r.returncode != 0 and "is mounted on" in r.stderr
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.may_skip
def test_root_device_is_refused():
    import os

    from pickfs.errors import UnsafeTarget
    from pickfs.stack.safety import check_device

    st = os.stat("/")
    majmin = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    for name in os.listdir("/sys/class/block"):
        if Path(f"/sys/class/block/{name}/dev").read_text().strip() == majmin:
            with pytest.raises(UnsafeTarget):
                check_device(f"/dev/{name}", f"/dev/{name}")
            return
    pytest.skip("the root filesystem is not on a block device here")


def test_confirmed_spare_device_is_used(workdir, spare):
    dev, _ = spare
    r = pickfs(workdir, "run", "--device", dev, "--confirm-device", dev, "--fs", "ext4,xfs",
               "--blocks", "1", "--runs", "1", "--warmup", "0", "--duration", "1s")
    assert r.returncode == 0, r.stderr
    assert "ext4" in r.stdout and "xfs" in r.stdout
    # pickfs unmounted it: the spare is free again
    assert dev not in Path("/proc/mounts").read_text()
