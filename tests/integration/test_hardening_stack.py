"""Hardening, for real as root: a work directory planted by another user is refused, the ledger
undoes only what pickfs made, loop state survives odd paths, images are private, and a host
without room refuses before mkfs. Under CI (root) a missing prerequisite fails instead of skipping."""

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from pickfs.errors import NoRoom, UntrustedWorkdir
from pickfs.model import FsConfig, Target
from pickfs.stack import blockdev
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision
from tests.conftest import loops_under, mounts_under

MiB = 1024**2


def require(ok: bool, why: str) -> None:
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"missing prerequisite (CI must have it): {why}")
    pytest.skip(why)


@pytest.fixture(autouse=True)
def as_root():
    require(os.geteuid() == 0, "needs root: planting as another user, loop devices, mount")


@pytest.fixture
def nobody():
    require(shutil.which("runuser") is not None, "runuser missing (apt-get install util-linux)")
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        require(False, "no 'nobody' user")


@pytest.fixture
def victims():
    """Root's own file, directory and process, outside any work directory."""
    base = Path(tempfile.mkdtemp(prefix="pickfs-victim-", dir="/var/tmp"))
    (base / "dir").mkdir()
    (base / "dir" / "data").write_text("keep me")
    (base / "file").write_text("keep me too")
    proc = subprocess.Popen(["sleep", "600"])
    yield base, proc
    proc.kill()
    proc.wait()
    shutil.rmtree(base, ignore_errors=True)


def assert_survived(victims) -> None:
    base, proc = victims
    assert (base / "dir" / "data").read_text() == "keep me"
    assert (base / "file").read_text() == "keep me too"
    assert proc.poll() is None, "a planted process entry killed root's process"


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def planted_entries(victims) -> dict[str, dict]:
    base, proc = victims
    now, dead = time.time(), dead_pid()

    def entry(kind: str, **fields) -> dict:
        return {"id": "x", "kind": kind, "pid": dead, "created": now - 60, "fields": fields}

    return {
        "00000000000000000001-1-000001": entry("process", child_pid=proc.pid, match=""),
        "00000000000000000001-1-000002": entry("image", path=str(base / "file")),
        "00000000000000000001-1-000003": entry("dir", path=str(base / "dir"), recursive=True),
    }


def pickfs_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CI": "1"}
    env.pop("PICKFS_WORKDIR", None)
    return subprocess.run([sys.executable, "-m", "pickfs", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got: {text!r}"
    assert "Traceback" not in text
    return lines[0]


@pytest.fixture
def attacker_dir(nobody):
    """A directory of nobody's own under /tmp, where nobody may plant anything."""
    base = Path(tempfile.mkdtemp(prefix="pickfs-plant-", dir="/tmp"))
    os.chown(base, nobody.pw_uid, nobody.pw_gid)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def as_nobody(script: str, *args: str) -> None:
    subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c", script, "sh", *args], check=True,
                   capture_output=True, text=True)


def test_a_workdir_planted_by_another_user_is_refused(attacker_dir, victims):
    workdir = attacker_dir / "pickfs-workdir"
    as_nobody('mkdir -p "$1/ledger"', str(workdir))
    for name, data in planted_entries(victims).items():
        as_nobody('printf %s "$2" > "$1"', str(workdir / "ledger" / f"{name}.json"), json.dumps(data))
    assert os.stat(workdir).st_uid == pwd.getpwnam("nobody").pw_uid

    done = pickfs_cli("cleanup", "--workdir", str(workdir))
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert "is owned by uid" in line and "will not trust it" in line and f"mv {workdir}" in line
    assert_survived(victims)

    # `pickfs run` goes through the same two calls before it undoes anything.
    from pickfs.cli.common import clean_orphans, ledger_for
    with pytest.raises(UntrustedWorkdir):
        clean_orphans(ledger_for(str(workdir)))
    assert_survived(victims)


def test_a_symlink_planted_as_the_workdir_is_refused(attacker_dir, victims):
    """nobody points the work directory at a root-owned directory holding a ledger of its choice."""
    rooted = Path(tempfile.mkdtemp(prefix="pickfs-rooted-", dir="/var/tmp"))
    try:
        (rooted / "ledger").mkdir(mode=0o700)
        for name, data in planted_entries(victims).items():
            (rooted / "ledger" / f"{name}.json").write_text(json.dumps(data))
        workdir = attacker_dir / "pickfs-workdir"
        as_nobody('ln -s "$1" "$2"', str(rooted), str(workdir))
        done = pickfs_cli("cleanup", "--workdir", str(workdir))
        assert done.returncode == 2, done.stderr
        assert "is a symbolic link" in one_line(done.stderr)
        assert_survived(victims)
    finally:
        shutil.rmtree(rooted, ignore_errors=True)


def test_entries_in_a_private_workdir_naming_outside_paths_are_left_alone(victims):
    workdir = Path(tempfile.mkdtemp(prefix="pickfs-work-", dir="/var/tmp"))  # root's own, 0700
    outside_mount = Path(tempfile.mkdtemp(prefix="pickfs-victim-mnt-", dir="/var/tmp"))
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "victim", str(outside_mount)], check=True)
        (workdir / "ledger").mkdir(mode=0o700)
        (workdir / "mnt" / "leftover").mkdir(parents=True)
        entries = planted_entries(victims)
        entries["00000000000000000001-1-000004"] = {"id": "x", "kind": "mount", "pid": dead_pid(),
                                                    "created": time.time(),
                                                    "fields": {"mountpoint": str(outside_mount)}}
        entries["00000000000000000001-1-000005"] = {"id": "x", "kind": "dir", "pid": dead_pid(),
                                                    "created": time.time(),
                                                    "fields": {"path": str(workdir / "mnt" / "leftover")}}
        for name, data in entries.items():
            (workdir / "ledger" / f"{name}.json").write_text(json.dumps(data))

        done = pickfs_cli("cleanup", "--workdir", str(workdir))
        assert done.returncode == 2, done.stdout + done.stderr
        said = done.stdout + done.stderr
        assert said.count("not undone:") == 4 and said.count("outside pickfs's work directory") == 3
        assert "names no command to match" in said
        assert_survived(victims)
        assert str(outside_mount) in mounts_under(outside_mount)
        assert not (workdir / "mnt" / "leftover").exists()  # inside the work directory: undone
        assert len(list((workdir / "ledger").glob("*.json"))) == 4  # the refused ones are kept
    finally:
        subprocess.run(["umount", str(outside_mount)], capture_output=True)
        outside_mount.rmdir()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("bad", ["/var/tmp/pickfs\nevil", "relative/pickfs"])
def test_unusable_workdir_paths_are_refused_up_front(bad):
    done = pickfs_cli("cleanup", "--workdir", bad)
    assert done.returncode == 2
    assert "pass --workdir an absolute path" in one_line(done.stderr)


def test_loop_devices_are_found_for_an_image_whose_path_holds_a_newline():
    require(shutil.which("losetup") is not None, "losetup missing (apt-get install util-linux)")
    base = Path(tempfile.mkdtemp(prefix="pickfs-nl-", dir="/var/tmp"))
    try:
        odd = base / "a\nb"
        odd.mkdir()
        image = odd / "x.img"
        with open(image, "wb") as fh:
            fh.truncate(8 * MiB)
        device = blockdev.attach_loop(image, direct_io=False)
        try:
            assert blockdev.loops_backed_by(image) == [device]
        finally:
            blockdev.detach_loop(device)
        assert blockdev.loops_backed_by(image) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_images_and_data_dirs_are_private_while_mounted(workdir):
    require(shutil.which("mkfs.ext4") is not None, "mkfs.ext4 missing (apt-get install e2fsprogs)")
    target = Target(kind="image", workdir=str(workdir), size_bytes=64 * MiB)
    with provision(FsConfig("ext4", "ext4"), target, Ledger(workdir / "ledger"), quiet_s=0.2) as prov:
        [image] = (workdir / "images").glob("*.img")
        assert stat.S_IMODE(os.stat(image).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(workdir / "images").st_mode) == 0o700
        assert stat.S_IMODE(os.stat(workdir / "mnt").st_mode) == 0o711
        assert stat.S_IMODE(os.stat(prov.datadir).st_mode) == 0o700
    assert mounts_under(workdir) == [] and loops_under(workdir) == []


def test_a_host_without_room_refuses_before_mkfs():
    workdir = Path("/var/tmp") / f"pickfs-room-{uuid.uuid4().hex[:8]}"
    workdir.mkdir(mode=0o700)
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32M,mode=0700", "pickfs-room", str(workdir)], check=True)
        ledger = Ledger(workdir / "ledger")
        target = Target(kind="image", workdir=str(workdir), size_bytes=1024 * MiB)
        with pytest.raises(NoRoom) as err:
            with provision(FsConfig("ext4", "ext4"), target, ledger):
                pass
        assert err.value.exit_code == 2 and "--size" in err.value.one_line()
        assert list((workdir / "images").iterdir()) == [] and ledger.entries() == []
        assert loops_under(workdir) == [] and mounts_under(workdir / "mnt") == []
    finally:
        subprocess.run(["umount", str(workdir)], capture_output=True)
        workdir.rmdir()
