"""What the fleet controller costs: a two-host `pickfs fleet run` against the same plan run by hand on each host.

Hosts are network namespaces on this machine, each with its own sshd and its own work directory (one on ext4,
one on ext3), made as the fleet tests make them (tests/integration/test_fleet.py). Three measurements:
  1. a fleet run on hosts that have never seen pickfs (it ships and installs it),
  2. the same fleet run again (pickfs already installed there),
  3. `pickfs run --plan` by hand on each host, one after the other, over ssh (what an operator would do).
Root; run it under `flock /tmp/pickfs-disk.lock`. Prints one JSON document.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.conftest import loops_under, mounts_under
from tests.integration.test_fleet import Fleet, Host, sh


def fleet_run(f: Fleet, inventory: Path) -> dict:
    t0 = time.monotonic()
    r = f.pickfs("fleet", "run", "-i", str(inventory), "--plan", str(f.plan), "--poll", "1s", timeout=900)
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    conn = sqlite3.connect(f.controller / "results.db")
    hosts = json.loads(conn.execute("SELECT hosts_json FROM fleets ORDER BY created DESC LIMIT 1").fetchone()[0])
    conn.close()
    return {"wall_s": round(wall, 1), "hosts": {h["name"]: {"job_s": round(h["job_s"], 1),
                                                            "host_total_s": round(h["wall_s"], 1)} for h in hosts}}


def by_hand(f: Fleet, h: Host) -> float:
    venv = h.workdir / "fleet" / "venv" / "bin" / "pickfs"
    ssh = ["ssh", "-i", str(f.key), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
           f"root@{h.addr}"]
    t0 = time.monotonic()
    r = subprocess.run([*ssh, f"{venv} run --plan {f.plan} --workdir {h.workdir} "
                              f"--results {h.workdir}/by-hand.db"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return round(time.monotonic() - t0, 1)


def main() -> None:
    tag = uuid.uuid4().hex[:4]
    root = Path("/var/tmp") / f"pickfs-fleet-bench-{tag}"
    root.mkdir(mode=0o700)
    hosts: list[Host] = []
    try:
        key = root / "id"
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        for i, (name, fstype) in enumerate((("a", "ext4"), ("b", "ext3"))):
            hosts.append(Host(root, tag, i, name, fstype))
            hosts[-1].start_sshd(key)
        f = Fleet(root, key, hosts)
        inventory = f.inventory()
        cold = fleet_run(f, inventory)
        warm = fleet_run(f, inventory)
        hand = {h.name: by_hand(f, h) for h in hosts}
        out = {
            "plan": "sqlite-tpcb on ext4 and ext4-nobarrier, 1 block, 4 rounds, 384M images",
            "fleet_first_contact": cold, "fleet_installed": warm, "by_hand_s": hand,
            "by_hand_one_after_the_other_s": round(sum(hand.values()), 1),
            "fleet_vs_by_hand_one_after_the_other": round(warm["wall_s"] / sum(hand.values()), 2),
            "controller_adds_s_over_slowest_host_by_hand": round(warm["wall_s"] - max(hand.values()), 1),
            "controller_adds_per_host_s": {n: round(v["host_total_s"] - v["job_s"], 1)
                                           for n, v in warm["hosts"].items()},
        }
        print(json.dumps(out, indent=1))
    finally:
        for h in hosts:
            h.remove()
        deadline = time.monotonic() + 120
        while (mounts_under(root) or loops_under(root)) and time.monotonic() < deadline:
            for mp in reversed(mounts_under(root)):
                subprocess.run(["umount", mp], capture_output=True)
            time.sleep(1)
        left = mounts_under(root) + loops_under(root)
        if left:
            print(f"left behind, not removed: {left}", file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", str(root)])


if __name__ == "__main__":
    main()
