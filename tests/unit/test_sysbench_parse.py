from pathlib import Path

import pytest

from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.risks import workload_risks
from pickfs.workloads.sysbench_oltp import SysbenchOltp, histogram, parse_output, per_second

STDOUT = (Path(__file__).parent.parent / "data" / "sysbench-oltp-stdout.txt").read_text()


def test_parse_captured_run():
    m = parse_output(STDOUT)
    assert m["transactions"] == 8945 and m["tps"] == pytest.approx(2979.05)
    assert m["qps"] == pytest.approx(59580.97) and m["errors"] == 0
    assert m["lat_avg"] == pytest.approx(0.00067)
    assert 0 < m["lat_p50"] <= m["lat_p95"] <= m["lat_p99"] <= m["lat_max"]


def test_histogram_counts_every_transaction():
    assert sum(histogram(STDOUT).values()) == 8945


def test_per_second_series():
    series = per_second(STDOUT)
    assert len(series) == 3 and series[0] == pytest.approx(3233.90)


def test_output_without_transactions_is_an_error():
    with pytest.raises(ValueError):
        parse_output("FATAL: unable to connect to MySQL server on socket")


def test_settings_and_risks():
    with pytest.raises(PlanError, match="test"):
        SysbenchOltp.normalize({"test": "oltp_everything"})
    spec = lambda **kw: WorkloadSpec("sysbench-oltp", "x", tuple(sorted(SysbenchOltp.normalize(kw).items())))
    assert workload_risks(spec()) == []
    assert workload_risks(spec(innodb_flush_log_at_trx_commit=2))[0].startswith("innodb_flush_log_at_trx_commit=2")
    assert "torn page" in workload_risks(spec(innodb_doublewrite=0))[0]
