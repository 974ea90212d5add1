"""pickfs env on real mounts: R2's dev box (ext3) against its CI box (ext4) is one command."""

import json

from pickfs.fingerprint import fingerprint
from pickfs.model import FsConfig, Target
from pickfs.report.envdiff import diff
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision
from tests.conftest import needs_root, pickfs

pytestmark = needs_root


def test_fingerprints_of_two_real_mounts_differ_where_it_matters(workdir):
    target = Target(workdir=str(workdir), size_bytes=1024**3)
    ledger = Ledger(workdir / "ledger")
    with provision(FsConfig("ci", "ext4", mount_options=("nobarrier",)), target, ledger) as prov:
        ci = fingerprint(str(prov.datadir))
        assert ci["mount.fstype"] == "ext4" and ci["mount.option.nobarrier"] == "on"
        assert ci["device.0.kind"] == "loop" and ci["device.0.scheduler"] == "none"
        assert ci["device.0.backing_file"].startswith(str(workdir))
    with provision(FsConfig("dev", "ext3"), target, ledger) as prov:
        dev = fingerprint(str(prov.datadir))
    differences = diff(dev, ci)
    # the barrier in force first (mountinfo lists only the nobarrier side), then the option asked for
    assert [d.key for d in differences[:3]] == ["mount.fstype", "mount.effective.barrier", "mount.option.nobarrier"]
    assert all(d.storage for d in differences[:3])
    assert any(k.startswith("note.") and "barriers off by default" in v for k, v in dev.items())
    (workdir / "dev.json").write_text(json.dumps(dev))
    (workdir / "ci.json").write_text(json.dumps(ci))
    r = pickfs(workdir, "env", "diff", str(workdir / "dev.json"), str(workdir / "ci.json"))
    assert r.returncode == 0, r.stderr
    first_rows = [line for line in r.stdout.splitlines() if "mount." in line][:2]
    assert "mount.fstype" in first_rows[0] and "ext3" in first_rows[0] and "ext4" in first_rows[0]


def test_runs_store_their_fingerprint_and_env_diff_reads_it(workdir):
    for _ in range(2):
        r = pickfs(workdir, "run", "--fs", "tmpfs", "--blocks", "1", "--runs", "1", "--warmup", "0", "--duration", "1s")
        assert r.returncode == 0, r.stderr
    runs = [r["id"] for r in json.loads(pickfs(workdir, "results", "--json", "-").stdout) if r["status"] == "complete"]
    assert len(runs) == 2
    r = pickfs(workdir, "env", "diff", runs[0], runs[1])
    assert r.returncode == 0, r.stderr
    assert "no differences" in r.stderr
