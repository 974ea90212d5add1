"""fio at a fixed rate on two real filesystems: every I/O due is accounted for, latency is measured from the
schedule fio followed, the fixed-rate table is shown, and nothing of the run is left running or mounted."""

from pathlib import Path

from tests.conftest import needs_root, pickfs
from tests.integration.test_fixed_rate import SHORT, fixed_rate_trials
from tests.integration.test_side_by_side import processes_under

pytestmark = needs_root

WRITES = ("--workload", "fileio", "--set", "read_share=0", "--set", "fsync_every=0", "--set", "direct=true",
          "--set", "size=32M", "--set", "files=2")


def test_fio_at_a_fixed_rate_on_two_filesystems(workdir: Path):
    r = pickfs(workdir, "run", *WRITES, "--rate", "200/s", *SHORT)
    assert r.returncode == 0, r.stderr
    rows = fixed_rate_trials(workdir)
    assert {c for c, _, _ in rows} == {0, 1} and len(rows) == 6
    for _, metrics, doc in rows:
        block = doc["fixed_rate"]
        assert block["offered"] == 200.0 and block["arrivals"] == "poisson"
        assert block["due"] == block["done"] + block["unfinished"]
        assert 100 <= block["due"] <= 300  # about 200 due in a 1 s slice
        assert "rate_iops=,200" in doc["job"] and doc["lat_log"].count("\n") >= block["done"]
        assert metrics["sched_p99"] >= metrics["sched_p50"] > 0 and metrics["offered_rate"] == 200.0
    assert "fileio at a fixed rate: latency from each transaction's scheduled start" in r.stdout
    assert "the client on tmpfs: at most" in r.stdout  # fio's own ceiling, measured in memory
    assert processes_under(workdir) == []
    assert not [p for p in Path("/dev/shm").iterdir() if p.name.startswith("pickfs-pgbench-")
                and p.stat().st_mtime >= workdir.stat().st_mtime and str(p.owner()) == "root"
                and _ledger_names(workdir, p)]


def _ledger_names(workdir: Path, p: Path) -> bool:
    """Is this log directory one this run recorded in its ledger (another run's are not ours to judge)?"""
    ledger = workdir / "ledger"
    return ledger.exists() and any(str(p) in f.read_text(errors="replace") for f in ledger.rglob("*") if f.is_file())


def test_a_mixed_fio_job_at_a_fixed_rate_is_refused_with_the_fix(workdir: Path):
    r = pickfs(workdir, "run", "--workload", "fileio", "--rate", "200/s", *SHORT)
    assert r.returncode == 2
    assert "read_share=1 (reads) or fileio.read_share=0 (writes)" in r.stderr + r.stdout
