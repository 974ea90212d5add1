from pathlib import Path

import pytest

from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.risks import workload_risks
from pickfs.workloads import workload_class
from pickfs.workloads.sqlite_tpcb import SqliteTpcb

RAW = (Path(__file__).parent.parent / "data" / "sqlite-tpcb-run.json").read_text()


def test_parse_captured_output():
    m = SqliteTpcb.parse(RAW)
    assert m["tps"] == 1000.0 and m["transactions"] == 2000
    assert m["lat_p50"] == pytest.approx(100e-6)  # the 1000th of 2000 sorted latencies
    assert m["lat_p95"] == pytest.approx(200e-6)
    assert m["lat_p99"] == pytest.approx(500e-6)
    assert m["lat_max"] == pytest.approx(25e-3)


def test_parse_refuses_other_output():
    with pytest.raises(ValueError):
        SqliteTpcb.parse('{"client": "pickfs-sqlite-tpcb", "step": "prepare"}')
    with pytest.raises(ValueError):
        SqliteTpcb.parse("not json")


def test_settings_are_normalised_and_checked():
    s = SqliteTpcb.normalize({"synchronous": "normal", "duration": "3s"})
    assert s["synchronous"] == "NORMAL" and s["duration"] == 3.0 and s["journal_mode"] == "WAL"
    with pytest.raises(PlanError, match="no setting"):
        SqliteTpcb.normalize({"synchronus": "OFF"})
    with pytest.raises(PlanError):
        SqliteTpcb.normalize({"scale": 0})


def test_unsafe_settings_are_flagged():
    def spec(**kw: object) -> WorkloadSpec:
        return WorkloadSpec("sqlite-tpcb", "x", tuple(sorted(SqliteTpcb.normalize(kw).items())))

    assert workload_risks(spec()) == []
    assert workload_risks(spec(synchronous="OFF"))[0].startswith("synchronous=OFF")
    assert "lose the last" in workload_risks(spec(synchronous="NORMAL"))[0]
    assert "corrupt" in workload_risks(spec(synchronous="NORMAL", journal_mode="DELETE"))[0]
    assert workload_risks(spec(synchronous="FULL", journal_mode="DELETE")) == []


def test_registry_names_valid_workloads():
    with pytest.raises(PlanError) as err:
        workload_class("pgbnech")
    assert "sqlite-tpcb" in err.value.hint
