import json

import pytest

from pickfs.clients.tpcc import Sizes, last_name, nurand
from pickfs.databases import DATABASES
from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.risks import workload_risks
from pickfs.workloads.tpcc import Tpcc


def run_doc(new_orders=600, elapsed=60.0, cpu=30.0):
    hist = {"1000": new_orders - 10, "9000": 10}
    types = {"new_order": {"count": new_orders, "errors": 1, "latency_us": hist}}
    for t, n in (("payment", 570), ("order_status", 50), ("delivery", 50), ("stock_level", 50)):
        types[t] = {"count": n, "errors": 0, "latency_us": {"500": n}}
    return json.dumps({"client": "pickfs-tpcc", "step": "run", "elapsed_s": elapsed, "types": types,
                       "client_cpu_s": cpu, "io": {"wchar": 1234}})


def test_parse():
    m = Tpcc.parse(run_doc())
    assert m["notpm"] == pytest.approx(600) and m["tpm_total"] == pytest.approx(1320)
    assert m["lat_p50"] == pytest.approx(0.001) and m["lat_max"] == pytest.approx(0.009)
    assert m["lat_p99_payment"] == pytest.approx(0.0005)
    assert m["errors"] == 1 and m["client_cpu_share"] == pytest.approx(0.5) and m["client_wchar"] == 1234
    with pytest.raises(ValueError):
        Tpcc.parse(json.dumps({"client": "pickfs-tpcc", "step": "load"}))


def test_backend_picks_the_service_and_risks():
    def spec(**kw: object) -> WorkloadSpec:
        return WorkloadSpec("tpcc", "t", tuple(sorted(Tpcc.normalize(kw).items())))

    assert Tpcc.service_for(spec()) is None
    assert Tpcc.service_for(spec(backend="postgresql")) == "postgresql"
    assert Tpcc.service_for(spec(backend="mariadb")) == "mariadb"
    assert workload_risks(spec()) == []
    assert workload_risks(spec(synchronous="OFF"))[0].startswith("synchronous=OFF")
    assert workload_risks(spec(backend="postgresql", fsync="off"))[0].startswith("fsync=off")
    assert workload_risks(spec(backend="mariadb", innodb_flush_log_at_trx_commit=0))[0].startswith("innodb")
    with pytest.raises(PlanError, match="backend"):
        Tpcc.normalize({"backend": "oracle"})


def test_client_helpers():
    assert last_name(0) == "BARBARBAR" and last_name(371) == "PRICALLYOUGHT"
    import random

    rng = random.Random(1)
    assert all(1 <= nurand(rng, 1023, 1, 300) <= 300 for _ in range(1000))
    s = Sizes(10)
    assert (s.items, s.customers, s.new_orders) == (10_000, 300, 90)
    assert DATABASES["firebird"].dialect.limit_one == " ROWS 1" and DATABASES["sqlite"].dialect.for_update == ""


def test_firebird_tpcb_parse_and_settings():
    from pickfs.workloads.firebird_tpcb import FirebirdTpcb

    doc = {"client": "pickfs-tpcc", "step": "run", "mix": "tpcb", "elapsed_s": 2.0, "client_cpu_s": 1.0,
           "forced_writes": False, "types": {"tpcb": {"count": 1000, "errors": 2, "latency_us": {"1500": 1000}}}}
    m = FirebirdTpcb.parse(json.dumps(doc))
    assert m["tps"] == 500 and m["errors"] == 2 and m["forced_writes_in_force"] == 0.0
    assert m["lat_p99"] == pytest.approx(0.0015) and m["client_cpu_share"] == 0.5
    s = FirebirdTpcb.normalize({"forced_writes": False, "scale": 2})
    assert s["forced_writes"] == "off" and s["scale"] == 2 and "scale_down" not in s
    assert FirebirdTpcb._size_args(WorkloadSpec("firebird-tpcb", "x", tuple(sorted(s.items())))) == ["--scale", "2"]
    with pytest.raises(PlanError, match="one client"):
        FirebirdTpcb.normalize({"clients": 4})
    with pytest.raises(PlanError, match="one client per process"):
        Tpcc.normalize({"backend": "firebird", "clients": 2})
