"""Hardening: the work directory is pickfs's own, the ledger undoes only what pickfs made,
loop state comes from sysfs, the host has room for an image, images are 0600."""

import json
import os
import stat
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from pickfs.errors import NoRoom, NotUndone, UntrustedWorkdir
from pickfs.stack import blockdev
from pickfs.stack.cleanup import holding, refusal, undo, undo_all, undo_entries
from pickfs.stack.ledger import Entry, Ledger, start_ticks
from pickfs.stack.provision import HOST_RESERVE_BYTES, check_room, growing_bytes, new_image, room_problem
from pickfs.stack.workdir import owner_problem, path_problem, prepare, private_dir

MiB = 1024**2


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def plant(ledger_dir: Path, name: str, kind: str, pid: int | None = None, created: float | None = None,
          **fields) -> Path:
    """A ledger entry as someone else could have written it: by hand, for a process that is gone."""
    path = ledger_dir / f"{name}.json"
    path.write_text(json.dumps({"id": name, "kind": kind, "pid": pid or dead_pid(),
                                "created": created or time.time(), "fields": fields}))
    return path


# --- the work directory -------------------------------------------------------------------------

@pytest.mark.parametrize("path, problem", [
    ("/var/tmp/pickfs", None),
    ("/var/tmp/a\nb", "control character"),
    ("/var/tmp/a\tb", "control character"),
    ("/var/tmp/a\x7fb", "control character"),
    ("pickfs-work", "not an absolute path"),
    ("", "empty"),
])
def test_path_problem(path, problem):
    got = path_problem(path)
    assert (got is None) if problem is None else (problem in got)


def test_owner_problem_refuses_links_others_and_writable_by_group_or_world():
    d = stat.S_IFDIR
    assert owner_problem(d | 0o700, 0, 0) is None
    assert owner_problem(d | 0o755, 1000, 1000) is None
    assert "symbolic link" in owner_problem(stat.S_IFLNK | 0o777, 0, 0)
    assert "not a directory" in owner_problem(stat.S_IFREG | 0o600, 0, 0)
    assert "owned by uid 65534" in owner_problem(d | 0o700, 65534, 0)
    assert "writable by group or others" in owner_problem(d | 0o775, 0, 0)
    assert "writable by group or others" in owner_problem(d | 0o1777, 0, 0)


def test_prepare_makes_a_private_workdir_and_ledger(tmp_path):
    wd = prepare(str(tmp_path / "new" / "pickfs"))
    assert stat.S_IMODE(os.lstat(wd).st_mode) == 0o711
    assert stat.S_IMODE(os.lstat(wd / "ledger").st_mode) == 0o700
    assert os.lstat(wd).st_uid == os.geteuid()


def test_prepare_tightens_an_own_readable_workdir(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir(mode=0o755)
    os.chmod(wd, 0o755)
    prepare(str(wd))
    assert stat.S_IMODE(os.lstat(wd).st_mode) == 0o711


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770])
def test_prepare_refuses_a_writable_workdir(tmp_path, mode):
    wd = tmp_path / "wd"
    wd.mkdir()
    os.chmod(wd, mode)
    with pytest.raises(UntrustedWorkdir) as err:
        prepare(str(wd))
    assert err.value.exit_code == 2 and "writable by group or others" in err.value.one_line()
    assert "\n" not in err.value.one_line() and "--workdir" in err.value.hint


def test_prepare_refuses_a_symlinked_workdir_or_ledger(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(UntrustedWorkdir, match="symbolic link"):
        prepare(str(tmp_path / "link"))
    wd = tmp_path / "wd"
    wd.mkdir(mode=0o700)
    (wd / "ledger").symlink_to(real)
    with pytest.raises(UntrustedWorkdir, match="symbolic link"):
        prepare(str(wd))
    with pytest.raises(UntrustedWorkdir, match="symbolic link"):
        Ledger(wd / "ledger").entries()


def test_prepare_refuses_bad_paths_with_one_line():
    for bad in ("relative/dir", "/var/tmp/a\nb"):
        with pytest.raises(UntrustedWorkdir) as err:
            prepare(bad)
        assert err.value.exit_code == 2 and "absolute path of plain characters" in err.value.hint
        assert "\n" not in err.value.one_line()


def test_a_ledger_in_a_writable_directory_is_not_read(tmp_path):
    led = tmp_path / "ledger"
    led.mkdir()
    plant(led, "1", "dir", path="/nonexistent")
    os.chmod(led, 0o777)
    with pytest.raises(UntrustedWorkdir):
        Ledger(led).entries()
    with pytest.raises(UntrustedWorkdir):
        Ledger(led).record("dir", path=str(tmp_path / "x"))


def test_private_dir_refuses_a_file_in_its_place(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UntrustedWorkdir, match="not a directory"):
        private_dir(tmp_path / "f", 0o700)


# --- undoing only what pickfs made --------------------------------------------------------------

@pytest.fixture
def wd(tmp_path):
    """A private work directory with a ledger; a victim directory and file beside it, outside."""
    work = prepare(str(tmp_path / "work"))
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    return work


def test_entries_naming_paths_outside_the_workdir_are_left_alone(wd, tmp_path):
    victim = tmp_path / "victim"
    led = Ledger(wd / "ledger")
    plant(led.directory, "1", "dir", path=str(victim), recursive=True)
    plant(led.directory, "2", "image", path=str(victim / "precious"))
    plant(led.directory, "3", "dir", path=str(wd / ".." / "victim"), recursive=True)
    plant(led.directory, "4", "mount", mountpoint="/")
    plant(led.directory, "5", "loop", image="/etc/passwd")
    report = undo_entries(led, led.orphans())
    assert (victim / "precious").read_text() == "keep me"
    assert report.undone == 0 and len(report.refused) == 5 and report.failed == ()
    assert all("outside pickfs's work directory" in line for line in report.refused)
    assert len(led.entries()) == 5  # kept, for the user to check


def test_a_symlink_inside_the_workdir_does_not_lead_outside(wd, tmp_path):
    (wd / "escape").symlink_to(tmp_path / "victim")
    led = Ledger(wd / "ledger")
    plant(led.directory, "1", "dir", path=str(wd / "escape"), recursive=True)
    plant(led.directory, "2", "image", path=str(wd / "escape" / "precious"))
    assert len(undo_all(led, led.orphans())) == 2
    assert (tmp_path / "victim" / "precious").read_text() == "keep me"


def test_entries_inside_the_workdir_and_pickfs_data_dirs_are_undone(wd, tmp_path):
    led = Ledger(wd / "ledger")
    inner, image = wd / "mnt" / "abc", wd / "images" / "x.img"
    inner.mkdir(parents=True)
    image.parent.mkdir()
    image.write_bytes(b"")
    datadir = tmp_path / "elsewhere" / "pickfs-0123456789ab"
    (datadir / "sub").mkdir(parents=True)
    plant(led.directory, "1", "dir", path=str(inner))
    plant(led.directory, "2", "image", path=str(image))
    plant(led.directory, "3", "dir", path=str(datadir), recursive=True)
    assert undo_all(led, led.orphans()) == []
    assert not inner.exists() and not image.exists() and not datadir.exists()
    assert led.entries() == []


def test_a_pickfs_named_symlink_outside_is_not_a_data_dir(wd, tmp_path):
    link = tmp_path / "pickfs-evil"
    link.symlink_to(tmp_path / "victim")
    e = Entry("1", "dir", 1, time.time(), {"path": str(link), "recursive": True})
    assert "outside" in refusal(e, wd)


def test_planted_ids_cannot_name_other_files(wd, tmp_path):
    led = Ledger(wd / "ledger")
    path = led.directory / "1.json"
    path.write_text(json.dumps({"id": "../../victim/precious", "kind": "dir", "pid": dead_pid(),
                                "created": time.time(), "fields": {"path": str(wd / "gone")}}))
    [e] = led.orphans()
    assert e.id == "1"
    assert undo_all(led, [e]) == []
    assert (tmp_path / "victim" / "precious").exists() and not path.exists()


def test_unknown_kind_is_left_alone_not_a_crash(wd):
    led = Ledger(wd / "ledger")
    plant(led.directory, "1", "rm-rf", path="/")
    [line] = undo_all(led, led.orphans())
    assert "unknown" in line


@pytest.fixture
def sleeper():
    p = subprocess.Popen(["sleep", "300"])
    time.sleep(0.05)
    yield p
    p.kill()
    p.wait()


def test_a_process_entry_with_an_empty_match_kills_nothing(wd, sleeper):
    led = Ledger(wd / "ledger")
    plant(led.directory, "1", "process", child_pid=sleeper.pid, match="", created=time.time() - 60)
    [line] = undo_all(led, led.orphans())
    assert "names no command" in line and sleeper.poll() is None


def test_a_process_started_before_its_entry_is_not_the_one_pickfs_started(wd, sleeper):
    led = Ledger(wd / "ledger")
    pidfile = wd / "server.pid"
    pidfile.write_text(f"{sleeper.pid}\n")
    plant(led.directory, "1", "process", pidfile=str(pidfile), match="sleep", created=time.time() + 30)
    assert undo_all(led, led.orphans()) == []
    assert sleeper.poll() is None  # the pid was someone else's: the entry goes, the process stays


def test_a_recorded_start_time_must_match(wd, sleeper):
    led = Ledger(wd / "ledger")
    ticks = start_ticks(sleeper.pid)
    plant(led.directory, "1", "process", child_pid=sleeper.pid, start_pid=sleeper.pid, start_ticks=ticks + 1,
          match="sleep", created=time.time() - 60)
    assert undo_all(led, led.orphans()) == []
    assert sleeper.poll() is None


def test_the_process_pickfs_started_is_stopped(wd):
    led = Ledger(wd / "ledger")
    with holding(led, "process", child_pid=0, match="sleep") as box:
        p = subprocess.Popen(["sleep", "300"])
        box[0] = led.update(box[0], child_pid=p.pid)
        assert box[0].get("start_ticks") == start_ticks(p.pid)
    p.wait(timeout=10)  # reaped already by the undo, which waits for it
    assert start_ticks(p.pid) is None and led.entries() == []


def test_scheduler_entries_need_a_real_device_and_a_known_scheduler(wd):
    def entry(**f):
        return Entry("1", "scheduler", 1, time.time(), f)

    assert "not under /dev" in refusal(entry(device="/etc/passwd", original="none"), wd)
    assert "/sys/block" in refusal(entry(device="/dev/../etc/passwd", original="none"), wd)
    assert "/sys/block" in refusal(entry(device="/dev/no-such-disk", original="none"), wd)
    real = next((f"/dev/{p.name}" for p in Path("/sys/block").iterdir() if Path(f"/dev/{p.name}").exists()), None)
    if real:
        assert "not one of" in refusal(entry(device=real, original="x; rm -rf /"), wd)
        assert refusal(entry(device=real, original="mq-deadline"), wd) is None


def test_undo_raises_not_undone_and_keeps_the_entry(wd, tmp_path):
    led = Ledger(wd / "ledger")
    e = led.record("image", path=str(tmp_path / "victim" / "precious"))
    with pytest.raises(NotUndone) as err:
        undo(led, e)
    assert err.value.exit_code == 2 and "outside pickfs's work directory" in err.value.one_line()
    assert led.entries() and (tmp_path / "victim" / "precious").exists()


# --- loop state from sysfs ----------------------------------------------------------------------

def fake_sysfs(root: Path, loops: dict[str, bytes | None]) -> Path:
    for name, backing in loops.items():
        (root / name).mkdir(parents=True)
        if backing is not None:
            (root / name / "loop").mkdir()
            (root / name / "loop" / "backing_file").write_bytes(backing)
    return root


def test_loop_backing_files_keep_newlines_in_paths(tmp_path):
    sysfs = fake_sysfs(tmp_path / "block", {
        "loop0": b"/var/tmp/a\n/dev/loop7/x.img\n",
        "loop7": b"/var/tmp/other.img\n",
        "loop2": None,  # not attached
    })
    backing = blockdev.loop_backing_files(sysfs)
    assert backing == {"/dev/loop0": "/var/tmp/a\n/dev/loop7/x.img", "/dev/loop7": "/var/tmp/other.img"}
    assert blockdev.devices_backed_by(backing, "/var/tmp/a\n/dev/loop7/x.img", "/nope") == ["/dev/loop0"]


def test_devices_backed_by_matches_given_or_resolved_path_in_order():
    backing = {"/dev/loop10": "/real/x.img", "/dev/loop2": "/link/x.img", "/dev/loop3": "/real/y.img",
               "/dev/sda": "/real/x.img"}
    assert blockdev.devices_backed_by(backing, "/link/x.img", "/real/x.img") == ["/dev/loop2", "/dev/loop10"]


def test_detach_refuses_what_is_no_loop_device():
    with pytest.raises(Exception, match="not a loop device"):
        blockdev.detach_loop("/dev/sda")


# --- host space and image permissions -----------------------------------------------------------

def test_room_problem_counts_the_image_the_other_images_and_a_reserve():
    assert room_problem(10 * 1024 * MiB, 1024 * MiB, 0) is None
    exact = 1024 * MiB + 512 * MiB + HOST_RESERVE_BYTES
    assert room_problem(exact, 1024 * MiB, 512 * MiB) is None
    said = room_problem(exact - 1, 1024 * MiB, 512 * MiB)
    assert said and "1024 MiB" in said and "512 MiB the other images" in said
    assert room_problem(100 * MiB, 1024 * MiB, 0)


def test_growing_bytes_is_what_sparse_images_may_still_take(tmp_path):
    (tmp_path / "a.img").write_bytes(b"")
    os.truncate(tmp_path / "a.img", 64 * MiB)
    (tmp_path / "b.img").write_bytes(b"x" * MiB)
    assert 63 * MiB <= growing_bytes(tmp_path) <= 64 * MiB


def test_check_room_names_the_fix(tmp_path):
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    with pytest.raises(NoRoom) as err:
        check_room(tmp_path, free + 1)
    assert err.value.exit_code == 2 and "--size" in err.value.hint and "--workdir" in err.value.hint
    check_room(tmp_path, MiB)


def test_new_images_are_0600_and_private(tmp_path):
    wd = prepare(str(tmp_path / "work"))
    led = Ledger(wd / "ledger")
    with ExitStack() as stack:
        image = new_image(led, stack, wd, 8 * MiB)
        assert stat.S_IMODE(os.lstat(image).st_mode) == 0o600
        assert stat.S_IMODE(os.lstat(image.parent).st_mode) == 0o700
        assert os.path.getsize(image) == 8 * MiB
    assert not image.exists() and led.entries() == []


def test_new_image_refused_without_room_leaves_nothing(tmp_path):
    wd = prepare(str(tmp_path / "work"))
    led = Ledger(wd / "ledger")
    huge = os.statvfs(wd).f_blocks * os.statvfs(wd).f_frsize * 2
    with pytest.raises(NoRoom), ExitStack() as stack:
        new_image(led, stack, wd, huge)
    assert not list((wd / "images").iterdir()) and led.entries() == []
