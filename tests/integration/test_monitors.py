"""Monitors on real runs: flushes, attribution of writes and waits to the right processes."""

import json

from tests.conftest import needs_root, pickfs

pytestmark = needs_root


def test_flushes_and_attribution_on_real_runs(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,ext4-nobarrier", "--set", "journal_mode=DELETE", "--blocks", "1", "--runs", "1",
               "--warmup", "0", "--duration", "2s", "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = {c["config"]: c for c in json.loads(out.read_text())["cells"]}
    ext4, nobarrier = cells["ext4"], cells["ext4-nobarrier"]
    tx = ext4["metrics"]["transactions"]["values"][0]
    # a rollback-journal commit on ext4 flushes the device several times; nobarrier never does
    assert ext4["monitors"]["disk_flushes"] >= 2 * tx
    assert nobarrier["monitors"]["disk_flushes"] == 0
    assert ext4["monitors"]["disk_write_bytes"] > 0 and 0 <= ext4["monitors"]["cpu_iowait_share"] <= 1
    assert ext4["monitors"]["space_used_bytes"] > 100_000 * 84  # at least the accounts table's fillers
    text = "\n".join(ext4["explanation"])
    assert "flushes" in text and "write amplification" in text
    # the client's own writes are counted, and the ext4 journal thread is seen waiting on I/O
    assert "wrote the most: workload client" in text
    assert "jbd2 (ext4 journal)" in text, text
    assert "0.00 flushes" in "\n".join(nobarrier["explanation"])


def test_no_monitors_flag(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "tmpfs", "--blocks", "1", "--runs", "1", "--warmup", "0", "--duration", "1s",
               "--no-monitors", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cell = json.loads(out.read_text())["cells"][0]
    assert cell["monitors"] == {} and cell["explanation"] == []


def test_stopping_rule_on_real_runs(workdir):
    """tmpfs is quiet: it settles within 5% at the minimum; a 0.1% target cannot be met and stops at max."""
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "tmpfs", "--one-at-a-time", "--runs", "3", "--warmup", "0", "--duration", "1s",
               "--target-ci", "0.1%", "--max-runs", "5", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cell = json.loads(out.read_text())["cells"][0]
    assert len(cell["values"]) == 5
    assert any(n.startswith("did not settle") for n in cell["notes"])
