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
    def spec(**kw: object) -> WorkloadSpec:
        return WorkloadSpec("pgbench", "pg", tuple(sorted(Pgbench.normalize(kw).items())))

    assert workload_risks(spec()) == []
    assert workload_risks(spec(fsync="off"))[0].startswith("fsync=off")
    assert workload_risks(spec(synchronous_commit="off"))[0].startswith("synchronous_commit=off")


def test_fixed_rate_logs_give_latency_from_the_schedule_and_count_skipped_and_unfinished(tmp_path):
    from pickfs.workloads.pgbench import fold_rate_logs, pgbench_rate_args

    log = tmp_path / "pgbench_log.7"
    # client tx latency script epoch us lag: with -R, latency runs from the scheduled start
    log.write_text("0 1 1500 0 1700000000 100 200\n0 2 9000 0 1700000000 900 8000\n"
                   "1 1 skipped 0 1700000001 5 60000\n1 2 failed 0 1700000001 5 10\n")
    block = fold_rate_logs([log], rate=3.0, limit_s=0.05, window_s=2)
    assert (block["done"], block["skipped"], block["failed"], block["late"]) == (2, 1, 1, 1)
    assert block["unfinished"] == 2 and block["due"] == 6  # 3/s x 2 s due, 4 seen
    assert block["latency_us"] == {"1500": 1, "9000": 1} and block["service_us"] == {"1000": 1, "1300": 1}
    hist, _, failed = fold_logs([log])
    assert failed == 1  # a skipped transaction is not a failure
    spec = WorkloadSpec("pgbench", "pgbench", tuple(sorted(Pgbench.normalize(
        {"rate": "250/s", "latency_limit": "20ms"}).items())))
    assert pgbench_rate_args(spec) == ["-R", "250", "--latency-limit=20"]
    assert pgbench_rate_args(WorkloadSpec("pgbench", "pgbench", tuple(Pgbench.normalize({}).items()))) == []
    with pytest.raises(PlanError):
        Pgbench.normalize({"rate": 10, "arrivals": "uniform"})
