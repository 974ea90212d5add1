"""tpcc on real servers started on a loop-mounted filesystem, one short run per backend."""

import json

import pytest

from pickfs.model import WorkloadSpec
from pickfs.workloads.tpcc import BACKENDS, Tpcc
from tests.conftest import ledger_entries, mounts_under, needs_root, pickfs

pytestmark = needs_root


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_tpcc_backend(workdir, backend):
    reason = Tpcc.unavailable_reason(WorkloadSpec("tpcc", "t", (("backend", backend),)))
    if reason:
        pytest.skip(reason)
    out = workdir / "run.json"
    clients = "1" if backend == "firebird" else "2"  # Firebird's embedded engine: one client
    r = pickfs(workdir, "run", "--fs", "ext4", "--workload", "tpcc", "--set", f"backend={backend}",
               "--set", f"clients={clients}", "--set", "scale_down=20", "--duration", "2s", "--blocks", "1", "--runs", "1", "--warmup", "0", "--size", "1G",
               "--json", str(out))
    assert r.returncode == 0, r.stderr
    [cell] = json.loads(out.read_text())["cells"]
    assert cell["status"] == "ok", cell["notes"]
    m = {k: v["values"][0] for k, v in cell["metrics"].items() if v["values"]}
    assert m["notpm"] > 0 and m["tpm_total"] > m["notpm"]
    assert 0 < m["client_cpu_share"] < int(clients) + 0.5  # the client threads, plus the interpreter
    assert m["lat_p99"] >= m["lat_p50"] > 0
    assert mounts_under(workdir) == [] and ledger_entries(workdir) == []
