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
    def spec(**kw: object) -> WorkloadSpec:
        return WorkloadSpec("sysbench-oltp", "x", tuple(sorted(SysbenchOltp.normalize(kw).items())))

    assert workload_risks(spec()) == []
    assert workload_risks(spec(innodb_flush_log_at_trx_commit=2))[0].startswith("innodb_flush_log_at_trx_commit=2")
    assert "torn page" in workload_risks(spec(innodb_doublewrite=0))[0]


def test_fixed_rate_block_from_sysbench_output():
    """sysbench --rate: its histogram (queue time included) as latency from the schedule; the queue it drops at
    --time counted unfinished against rate x window; no lag known, so no late share."""
    from pickfs.workloads.latency import rate_metrics
    from pickfs.workloads.sysbench_oltp import SysbenchOltp, fixed_rate_block

    text = STDOUT
    done = int(parse_output(text)["transactions"])
    block = fixed_rate_block(text, rate=done / 2 * 1.5, window_s=2)
    assert block["done"] == done and block["due"] == round(done * 1.5) and block["unfinished"] == block["due"] - done
    assert sum(block["latency_us"].values()) > 0
    m = rate_metrics(block)
    assert "late_share" not in m and m["skipped_share"] == pytest.approx(1 / 3, abs=0.01)
    assert m["sched_p50"] == pytest.approx(parse_output(text)["lat_p50"], rel=1e-3)
    with pytest.raises(PlanError):
        SysbenchOltp.normalize({"rate": 100, "latency_limit": "10ms"})
