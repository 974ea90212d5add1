"""fio workloads, the raw baseline, file-tree workloads and the user's command, on real loop devices."""

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from pickfs.errors import UnsafeTarget
from pickfs.model import Target, WorkloadSpec
from pickfs.plan import resolve_fs_name
from pickfs.services.mariadb import MariaDB
from pickfs.stack.ledger import Ledger
from pickfs.stack.presets import RAW_CONFIG
from pickfs.stack.provision import provision
from pickfs.workloads.fio import Fileio, FileioFirstTouch, fio_unavailable
from tests.conftest import ledger_entries, needs_root, pickfs

pytestmark = [needs_root, pytest.mark.skipif(fio_unavailable() is not None, reason=str(fio_unavailable()))]
ONE = ("--blocks", "1", "--runs", "1", "--warmup", "0", "--size", "1G")


def cells_of(path: Path) -> dict[tuple[str, str], dict]:
    return {(c["config"], c["workload"]): c for c in json.loads(path.read_text())["cells"]}


def raw_outputs(workdir: Path, phase: str = "measured") -> list[str]:
    conn = sqlite3.connect(workdir / "results.db")
    try:
        return [r[0] for r in conn.execute("SELECT raw_output FROM trials WHERE phase=? ORDER BY id", (phase,))]
    finally:
        conn.close()


def spec(cls, **settings):
    return WorkloadSpec(cls.name, cls.name, tuple(sorted(cls.normalize(settings).items())))


def test_wal_scored_against_the_raw_device(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "raw,ext4", "--workload", "wal", "--workload", "sqlite-tpcb",
               "--set", 'methods=["fdatasync", "o_dsync", "o_direct_dsync"]', "--duration", "0.4s",
               "--baseline", "raw", "--blocks", "1", "--runs", "2", "--warmup", "0", "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = cells_of(out)
    raw, ext4 = cells["raw", "wal"], cells["ext4", "wal"]
    assert raw["status"] == ext4["status"] == "ok", (raw["notes"], ext4["notes"])
    assert raw["relative_to_baseline"] == pytest.approx(100)
    # side by side, the score is the paired ratio against raw measured at the same moments
    assert ext4["relative_to_baseline"] == pytest.approx(100 * ext4["comparison"]["ratio"])
    assert ext4["method"].startswith("side by side")
    for cell in (raw, ext4):
        for method in ("fdatasync", "o_dsync", "o_direct_dsync"):
            for size in ("8k", "16k"):
                assert min(cell["metrics"][f"{method}_{size}_per_s"]["values"]) > 0
        assert cell["metrics"]["methods_refused"]["values"] == [0, 0]
    assert raw["space_used_bytes"] == {} and ext4["space_used_bytes"]["after mkfs"] > 0
    assert ext4["space_used_bytes"]["data in place"] >= 16 * 1024**2  # the prewritten log file
    sqlite_on_raw = cells["raw", "sqlite-tpcb"]
    assert sqlite_on_raw["status"] == "unavailable" and "needs a filesystem" in sqlite_on_raw["notes"][0]
    assert "o_direct_dsync_16k_per_s" in r.stdout  # the per-method breakdown table
    assert ledger_entries(workdir) == []


def _unwritten_extents(path: Path) -> int:
    out = subprocess.run(["filefrag", "-v", str(path)], capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if "unwritten" in line)


def test_fileio_measures_written_blocks_and_first_touch_meets_unwritten_ones(workdir):
    ledger = Ledger(workdir / "ledger")
    settings = {"size": "32M", "files": 2, "block_size": "4K", "read_share": 0, "fsync_every": 1,
                "sync": "fdatasync", "duration": 0.5}
    with provision(resolve_fs_name("ext4"), Target(workdir=str(workdir), size_bytes=512 * 1024**2), ledger) as prov:
        steady = spec(Fileio, **settings)
        Fileio().prepare(steady, prov.datadir)
        files = sorted(prov.datadir.glob("pickfs-fileio.*"))
        assert len(files) == 2 and all(f.stat().st_size == 16 * 1024**2 for f in files)
        assert sum(_unwritten_extents(f) for f in files) == 0
        m = Fileio.parse(Fileio().run(steady, prov.datadir).text)
        assert m["write_iops"] > 0 and m["syncs_per_s"] == pytest.approx(m["write_iops"], rel=0.05)

        first = spec(FileioFirstTouch, **settings)
        FileioFirstTouch().fresh_files(first, prov.datadir)
        assert all(_unwritten_extents(f) > 0 for f in files)  # preallocated, never written
        m = FileioFirstTouch.parse(FileioFirstTouch().run(first, prov.datadir).text)
        assert m["write_iops"] > 0 and m["sync_p99"] > 0
    assert ledger_entries(workdir) == []


def test_the_raw_baseline_refuses_a_mounted_device(workdir):
    image = workdir / "spare.img"
    with open(image, "wb") as fh:
        fh.truncate(256 * 1024**2)
    loop = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True,
                          check=True).stdout.strip()
    mnt = workdir / "m"
    mnt.mkdir()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
        subprocess.run(["mount", loop, str(mnt)], check=True)
        (mnt / "precious").write_text("user data")
        target = Target(kind="device", workdir=str(workdir), device=loop, confirm=loop)
        with pytest.raises(UnsafeTarget, match="mounted"):
            with provision(RAW_CONFIG, target, Ledger(workdir / "ledger")):
                pass
        assert (mnt / "precious").read_text() == "user data"
    finally:
        subprocess.run(["umount", str(mnt)])
        subprocess.run(["losetup", "-d", loop])


def test_tree_phases_each_timed_and_data_made_once(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,xfs", "--workload", "tree", "--set", "source=generated",
               "--set", "files=400", *ONE, "--json", str(out))
    assert r.returncode == 0, r.stderr
    for fs in ("ext4", "xfs"):
        cell = cells_of(out)[fs, "tree"]
        assert cell["status"] == "ok", cell["notes"]
        phases = {p: cell["metrics"][f"{p}_s"]["values"][0] for p in ("copy_in", "extract", "copy", "delete")}
        assert all(v > 0 for v in phases.values())
        assert cell["values"][0] == pytest.approx(sum(phases.values()))
        peak = cell["metrics"]["space_peak_bytes"]["values"][0]
        assert peak > cell["space_used_bytes"]["after mkfs"] + 2 * 400 * 4096  # two trees and a tarball
    made = [p.name for p in (workdir / "data").iterdir()]
    assert made == ["tree-400-1"], made  # generated once, outside the filesystems, for both
    for raw in raw_outputs(workdir):
        doc = json.loads(raw)
        assert doc["caches_dropped"] is True
        assert doc["phases"][0]["preloaded_bytes"] > 0  # the source was read into memory before timing
    assert "extract_s" in r.stdout


def test_small_medium_and_big_files(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4", "--workload", "smallfiles", "--workload", "mediumfiles",
               "--workload", "bigfiles", "--set", "packages=200", "--set", "total=24M", "--set", "files=1",
               "--set", "file_size=48M", "--set", "reflink=never", *ONE, "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = cells_of(out)
    expected = {"smallfiles": ("write", "search", "query", "delete"), "mediumfiles": ("copy_in", "delete"),
                "bigfiles": ("copy_in", "copy", "delete")}
    for name, phases in expected.items():
        cell = cells["ext4", name]
        assert cell["status"] == "ok", cell["notes"]
        assert all(cell["metrics"][f"{p}_s"]["values"][0] > 0 for p in phases)
    assert cells["ext4", "bigfiles"]["metrics"]["space_peak_bytes"]["values"][0] >= 2 * 48 * 1024**2


@pytest.mark.skipif(MariaDB.unavailable_reason() is not None, reason=str(MariaDB.unavailable_reason()))
def test_command_runs_against_a_server_on_the_filesystem_and_a_failure_is_not_timed(workdir):
    script = workdir / "suite.sh"
    script.write_text(
        "#!/bin/sh\nset -e\n"
        "mariadb -e 'CREATE DATABASE IF NOT EXISTS app; CREATE TABLE IF NOT EXISTS app.t (i INT)'\n"
        "for i in $(seq 1 50); do echo \"INSERT INTO app.t VALUES ($i);\"; done | mariadb app\n"
        "echo rows=$(mariadb -N -e 'SELECT COUNT(*) FROM app.t')\n"
        "echo cwd=$(pwd) datadir=$(mariadb -N -e 'SELECT @@datadir')\n"
        "test -n \"$DATABASE_URL\" && test -d \"$TMPDIR\" && touch \"$PICKFS_DIR/was-here\"\n")
    script.chmod(0o755)
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4", "--workload", "command", "--set", f"command={script}",
               "--set", "server=mariadb", "--set", "innodb_flush_log_at_trx_commit=1", *ONE, "--json", str(out))
    assert r.returncode == 0, r.stderr
    cell = cells_of(out)["ext4", "command"]
    assert cell["status"] == "ok", cell["notes"]
    assert cell["values"][0] > 0
    [raw] = raw_outputs(workdir)
    tail = json.loads(raw)["output_tail"]
    assert "rows=50" in tail
    cwd = tail.split("cwd=")[1].split()[0]
    datadir = tail.split("datadir=")[1].split()[0]
    assert cwd.startswith(str(workdir / "mnt")) and datadir.startswith(str(workdir / "mnt"))
    assert Path(cwd).parent == Path(datadir).parent  # both in the data directory on the mounted filesystem

    out2 = workdir / "fail.json"
    r = pickfs(workdir, "run", "--fs", "ext4", "--workload", "command", "--set", "command='echo broken >&2; exit 3'",
               *ONE, "--json", str(out2))
    assert r.returncode == 1 and "no configuration gave a result" in r.stderr, r.stderr  # the only one failed
    cell = cells_of(out2)["ext4", "command"]
    assert cell["status"] == "failed" and cell["values"] == []
    assert any("exited 3" in n and "broken" in n for n in cell["notes"]), cell["notes"]  # beside setup notes
    assert ledger_entries(workdir) == []
