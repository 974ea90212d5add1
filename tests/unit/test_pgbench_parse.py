import json
from pathlib import Path

import pytest

from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.risks import workload_risks
from pickfs.workloads.pgbench import Pgbench, fold_logs, parse_summary

DATA = Path(__file__).parent.parent / "data"


def test_summary_of_captured_output():
    stdout = (DATA / "pgbench-stdout.txt").read_text()
    s = parse_summary(stdout)
    assert s["tps"] > 0 and s["transactions"] > 0
    assert 0 < s["lat_avg"] < 1 and s["lat_stddev"] >= 0


def test_summary_without_tps_is_an_error():
    with pytest.raises(ValueError):
        parse_summary("pgbench: error: connection to server failed")


def test_fold_logs(tmp_path):
    a = tmp_path / "pgbench_log.100"
    a.write_text("0 1 1500 0 1700000000 100\n0 2 2500 0 1700000000 900000\n1 1 failed 0 1700000002 5\n")
    b = tmp_path / "pgbench_log.100.1"
    b.write_text("1 1 1234 0 1700000002 10\n")
    hist, per_second, failed = fold_logs([a, b])
    assert hist == {"1230": 1, "1500": 1, "2500": 1}
    assert per_second == [2, 0, 1] and failed == 1


def test_parse_full_document():
    doc = {"client": "pgbench", "stdout": (DATA / "pgbench-stdout.txt").read_text(),
           "latency_us": {"1000": 90, "5000": 10}, "per_second": [50, 50], "failed": 0}
    m = Pgbench.parse(json.dumps(doc))
    assert m["lat_p50"] == pytest.approx(0.001) and m["lat_p99"] == pytest.approx(0.005)
    assert m["failed"] == 0 and m["tps"] > 0
    with pytest.raises(ValueError):
        Pgbench.parse(json.dumps({"client": "sysbench"}))


def test_settings_checked():
    s = Pgbench.normalize({"clients": 8, "threads": 2, "fsync": "off"})
    assert s["fsync"] == "off" and s["mode"] == "tpcb-like"
    with pytest.raises(PlanError, match="threads cannot exceed clients"):
        Pgbench.normalize({"clients": 1, "threads": 2})
    with pytest.raises(PlanError, match="mode"):
        Pgbench.normalize({"mode": "tpcc"})


def test_durability_settings_are_flagged():
    spec = lambda **kw: WorkloadSpec("pgbench", "pg", tuple(sorted(Pgbench.normalize(kw).items())))
    assert workload_risks(spec()) == []
    assert workload_risks(spec(fsync="off"))[0].startswith("fsync=off")
    assert workload_risks(spec(synchronous_commit="off"))[0].startswith("synchronous_commit=off")
