"""A plan's mkfs or mount options never reach a device nobody named: the issue's reproduction on real loop devices.

A spare loop device holding an ext4 with a file on it stands for a disk with data on it, never named with
--device. A plan naming it through mkfs (`mkfs = "/dev/loopN"` for btrfs, `-l logdev=` for xfs) or mount
(`device=` for btrfs) is refused at plan time with exit 2 and the file is still there; the check runs again
right before mkfs and mount, and mkfs runs from inside an empty directory.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from pickfs.errors import CommandFailed, PlanError
from pickfs.model import FsConfig, Target
from pickfs.stack import blockdev
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision
from tests.conftest import mounts_under, needs_root, pickfs

pytestmark = needs_root


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture
def spare(workdir):
    """A loop device outside pickfs's control holding an ext4 with a file on it; detached afterwards."""
    image = workdir / "spare.img"
    with open(image, "wb") as fh:
        fh.truncate(512 * 1024**2)
    dev = blockdev.attach_loop(image, direct_io=False)
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "precious", dev], check=True)
        mnt = workdir / "spare-mnt"
        mnt.mkdir()
        subprocess.run(["mount", dev, str(mnt)], check=True)
        (mnt / "keep.txt").write_text("data nobody said pickfs may touch\n")
        subprocess.run(["umount", str(mnt)], check=True)
        subprocess.run(["sync"], check=True)
        yield dev, image, digest(image)
    finally:
        subprocess.run(["umount", dev], capture_output=True)
        blockdev.detach_loop(dev)


def still_there(workdir: Path, dev: str, image: Path, before: str) -> None:
    """The spare device is byte for byte what it was, and its file reads back."""
    subprocess.run(["sync"], check=True)
    assert digest(image) == before
    mnt = workdir / "check-mnt"
    mnt.mkdir(exist_ok=True)
    subprocess.run(["mount", "-o", "ro", dev, str(mnt)], check=True)
    try:
        assert (mnt / "keep.txt").read_text() == "data nobody said pickfs may touch\n"
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.parametrize("config,fragment", [
    ('fs = "btrfs"\nmkfs = "{dev}"', "stands alone"),
    ('fs = "xfs"\nmkfs = "-l logdev={dev}"', "'logdev' is not one pickfs accepts"),
    ('fs = "btrfs"\nmount = "device={dev}"', "device is not a mount option pickfs accepts for btrfs"),
])
def test_a_plan_naming_a_spare_device_in_its_options_is_refused_and_the_device_untouched(workdir, spare, config,
                                                                                            fragment):
    dev, image, before = spare
    plan = workdir / "plan.toml"
    plan.write_text(f'[[config]]\n{config.format(dev=dev)}\n[method]\nruns = 1\n')
    for args in (["plan", "check", str(plan)], ["run", "--plan", str(plan)], ["run", "--plan", str(plan), "--dry-run"]):
        r = pickfs(workdir, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert fragment in r.stderr and "drop or change it" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not (workdir / "images").exists() and mounts_under(workdir) == []
    still_there(workdir, dev, image, before)


@pytest.mark.parametrize("config", [
    FsConfig("btrfs-extra", "btrfs", mkfs_options=("{dev}",)),
    FsConfig("xfs-logdev", "xfs", mkfs_options=("-l", "logdev={dev}")),
    FsConfig("btrfs-device", "btrfs", mount_options=("device={dev}",)),
])
def test_the_last_moment_check_refuses_a_plan_that_skipped_the_plan_time_one(workdir, spare, config):
    """provision() as a stored plan or a search's configuration reaches it, bypassing build_plan."""
    dev, image, before = spare
    bad = FsConfig(config.name, config.fstype, tuple(o.format(dev=dev) for o in config.mkfs_options),
                   tuple(o.format(dev=dev) for o in config.mount_options))
    ledger = Ledger(workdir / "ledger")
    with pytest.raises(PlanError, match="option"), provision(bad, Target(workdir=str(workdir), size_bytes=1024**3),
                                                              ledger):
        pytest.fail("provisioned a configuration whose options name another device")
    assert ledger.entries() == [] and mounts_under(workdir / "mnt") == []
    still_there(workdir, dev, image, before)


def test_mkfs_runs_from_an_empty_directory(workdir, monkeypatch):
    """A type pickfs has no grammar for takes a plain value after a flag: `-l bb` (mkfs.minix's bad-blocks file).
    From the directory pickfs was started in, 'bb' would be read; from the empty mount point it is found nowhere."""
    if not Path("/sbin/mkfs.minix").exists() and not Path("/usr/sbin/mkfs.minix").exists():
        pytest.skip("mkfs.minix (util-linux) is not installed")
    here = workdir / "started-here"
    here.mkdir()
    (here / "bb").write_text("5000\n")  # a valid bad-blocks list: mkfs.minix would read it and go on
    monkeypatch.chdir(here)
    ledger = Ledger(workdir / "ledger")
    with pytest.raises(CommandFailed, match="bad blocks") as exc, \
            provision(FsConfig("m", "minix", mkfs_options=("-l", "bb")), Target(workdir=str(workdir), size_bytes=64 * 1024**2),
                      ledger):
        pytest.fail("mkfs read a file from the directory pickfs was started in")
    assert "No such file" in exc.value.stderr
    assert ledger.entries() == [] and os.getcwd() == str(here)


@pytest.mark.may_skip
def test_the_root_disk_is_refused_as_such_never_with_a_umount_hint(workdir):
    """A dry run naming the disk the system runs from, with and without --confirm-device: refused, and the hint
    names a spare disk; never `umount /`. pickfs only reads it (mountinfo, sysfs)."""
    st = os.stat("/")
    majmin = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    root = None
    for name in os.listdir("/sys/class/block"):
        if Path(f"/sys/class/block/{name}/dev").read_text().strip() == majmin:
            parent = Path(f"/sys/class/block/{name}").resolve().parent
            root = f"/dev/{parent.name}" if (Path(f"/sys/class/block/{name}/partition")).exists() else f"/dev/{name}"
    if root is None:
        pytest.skip("the root filesystem is not on a block device here")
    for confirm in ([], ["--confirm-device", root]):
        r = pickfs(workdir, "run", "--target", "device", "--device", root, *confirm, "--dry-run")
        text = r.stdout + r.stderr
        assert f"{root} holds the root filesystem" in text and "never formats the disk the system runs from" in text
        assert "umount" not in text and "name a spare disk" in text
