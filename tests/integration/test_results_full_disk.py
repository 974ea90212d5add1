"""A results file on a real full filesystem (a small tmpfs filled up): every write says so in one line and leaves
nothing beside the file; every read works as before and writes nothing beside it, then or once space is back.
And on a read-only filesystem: reads work, a write says why it cannot."""

import gzip
import hashlib
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import IS_ROOT, pickfs

REAL = Path(__file__).parent.parent / "data" / "real-runs.db.gz"
LEFT_OUT = "20261122-172811-bf83"  # the run the file on the full disk lacks: merging it is the write refused


@pytest.fixture(autouse=True)
def _root():
    if not IS_ROOT:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("needs root: mount")


@contextmanager
def small_tmpfs(path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs at `path`, unmounted afterwards."""
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "pickfs-test-full", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def fill_to(path: Path, free_kib: int) -> None:
    st = os.statvfs(path)
    room = st.f_bfree * st.f_frsize - free_kib * 1024
    with open(path / "filler", "wb", buffering=0) as fh:
        try:
            while room > 0:
                room -= fh.write(b"\0" * min(room, 65536))
        except OSError:
            pass


def state(d: Path) -> dict[str, tuple[int, int, str]]:
    """Every file in `d` but the filler (the directory's own entries: anything made beside the results file shows): its size, its time of change and the sha256 of its bytes."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(d.iterdir()) if p.name != "filler"}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> tuple[Path, Path]:
    """The real runs (the source to merge) and a copy without one of them (the file on the full disk)."""
    d = tmp_path_factory.mktemp("real")
    source = d / "source.db"
    source.write_bytes(gzip.decompress(REAL.read_bytes()))
    lacking = d / "lacking.db"
    shutil.copyfile(source, lacking)
    conn = sqlite3.connect(lacking)
    conn.execute("DELETE FROM trials WHERE run_id=?", (LEFT_OUT,))
    conn.execute("DELETE FROM runs WHERE id=?", (LEFT_OUT,))
    conn.commit()
    conn.execute("VACUUM")
    conn.execute("PRAGMA journal_mode=WAL")  # as pickfs leaves every file it writes
    conn.close()
    return source, lacking


def one_error(r: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.stderr
    return errors[0]


def reads_work_and_change_nothing(workdir: Path, db: Path) -> None:
    before = state(db.parent)
    for args in (["results"], ["report", "latest", "--json", "-"],
                 ["compare", "20261122-164420-6bb2", "20261122-164741-a9ed"]):
        r = pickfs(workdir, *args, "--results", str(db))
        assert r.returncode == 0, (args, r.stderr)
    assert state(db.parent) == before


@pytest.mark.parametrize("free_kib", [0, 12, 24, 40, 100])  # SQLite failed on its -shm at 12 and 24 ("I/O error")
def test_a_write_to_a_results_file_on_a_full_disk_says_so_and_leaves_nothing_beside_it(workdir, files, free_kib):
    source, lacking = files
    with small_tmpfs(workdir / "full") as full:
        db = full / "results.db"
        shutil.copyfile(lacking, db)
        os.chmod(db, 0o600)
        fill_to(full, free_kib)
        before = state(full)
        writes = {"merge": ["merge", str(source), "--results", str(db)],
                  "run": ["run", "--fs", "tmpfs", "--workload", "sqlite-tpcb", "--duration", "1s", "--runs", "1",
                          "--warmup", "0", "--results", str(db)]}
        for what, args in writes.items():
            r = pickfs(workdir, *args)
            line = one_error(r)
            assert r.returncode == 1, (what, r.stderr)
            assert f"no space left on the device holding the results database {db}" in line, (what, line)
            assert "free space there, or pass --results PATH" in line, line
            assert state(full) == before, what  # the file unchanged, no -wal or -shm beside it
        reads_work_and_change_nothing(workdir, db)


def test_a_disk_that_fills_during_a_write_keeps_what_was_committed_and_reads_change_nothing(workdir, files):
    source, lacking = files
    with small_tmpfs(workdir / "full") as full:
        db = full / "results.db"
        shutil.copyfile(lacking, db)
        os.chmod(db, 0o600)
        fill_to(full, 400)  # room to open the file and bring its schema up to date, not for the run merged
        r = pickfs(workdir, "merge", str(source), "--results", str(db))
        line = one_error(r)
        assert r.returncode == 1 and "no space left on the device holding" in line, r.stderr
        assert "--resume" not in line  # a merge is no run to resume
        reads_work_and_change_nothing(workdir, db)  # the log holds the schema's update: read, never rebuilt
        (full / "filler").unlink()
        reads_work_and_change_nothing(workdir, db)
        r = pickfs(workdir, "merge", str(source), "--results", str(db))
        assert r.returncode == 0 and "1 new run(s)" in r.stderr + r.stdout, r.stderr
        assert sorted(p.name for p in full.iterdir()) == ["results.db"]


def test_a_read_beside_the_log_and_index_a_dead_writer_left_on_a_full_disk_changes_neither(workdir, files):
    _, lacking = files
    with small_tmpfs(workdir / "full") as full:
        db = full / "results.db"
        shutil.copyfile(lacking, db)
        os.chmod(db, 0o600)
        for suffix in ("-wal", "-shm"):  # what an older pickfs left when the disk filled as it opened the file
            Path(f"{db}{suffix}").write_bytes(b"")
        fill_to(full, 0)
        before = state(full)
        for args in (["results"], ["report", "latest"], ["report", "latest", "--json", "-"]):
            r = pickfs(workdir, *args, "--results", str(db))
            assert r.returncode == 0, r.stderr
            assert state(full) == before
        (full / "filler").unlink()  # space is back: a read still writes nothing (no -shm rebuilt in the file)
        r = pickfs(workdir, "results", "--results", str(db))
        assert r.returncode == 0 and "20261122-164420-6bb2" in r.stdout, r.stderr
        assert state(full) == before


@pytest.mark.parametrize("free_kib", [0, 12, 24])
def test_when_the_disk_fills_as_the_file_is_opened_what_the_open_made_is_removed(workdir, files, free_kib, monkeypatch):
    from pickfs.errors import ResultsWriteFailed
    from pickfs.store import ResultStore, results

    monkeypatch.setattr(results, "no_space", lambda d: False)  # past the look before: the disk fills meanwhile
    _, lacking = files
    with small_tmpfs(workdir / "full") as full:
        db = full / "results.db"
        shutil.copyfile(lacking, db)
        os.chmod(db, 0o600)
        fill_to(full, free_kib)
        before = state(full)
        with pytest.raises(ResultsWriteFailed, match="no space left on the device holding"):
            ResultStore(db)
        assert state(full) == before


def test_on_a_read_only_filesystem_reads_work_and_a_write_says_why_it_cannot(workdir, files):
    _, lacking = files
    with small_tmpfs(workdir / "ro") as ro:
        db = ro / "results.db"
        shutil.copyfile(lacking, db)
        os.chmod(db, 0o600)
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        reads_work_and_change_nothing(workdir, db)
        r = pickfs(workdir, "merge", str(files[0]), "--results", str(db))
        line = one_error(r)
        assert r.returncode == 1 and f"{db}: it is on a read-only filesystem" in line and "--results PATH" in line, line
