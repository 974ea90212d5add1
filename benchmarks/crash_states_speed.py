"""How fast does a crash test explore power-cut states? States per second per database, and the wall time
of one configuration with many states.

Runs `pickfs crashtest` (real recorder, real filesystems, real servers) for each workload given and
prints, per cell: the states checked, states per second while checking, seconds building images
(base that follows the durable writes, copied per state) against checking them, and the wall time
of the whole command. Needs root; wrap it in the disk lock:

    flock /tmp/pickfs-disk.lock .venv/bin/python benchmarks/crash_states_speed.py --fs ext4 \\
        --workload sqlite-tpcb --states 200
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fs", default="ext4")
    p.add_argument("--workload", action="append", default=[], help="repeatable; default sqlite-tpcb")
    p.add_argument("--set", action="append", default=[], dest="sets")
    p.add_argument("--states", type=int, default=200)
    p.add_argument("--duration", default="3s")
    p.add_argument("--workdir", default="/var/tmp/pickfs-crash-bench")
    a = p.parse_args(argv)
    Path(a.workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=a.workdir) as tmp:
        out = Path(tmp) / "crash.json"
        argv_ = [sys.executable, "-m", "pickfs", "crashtest", "--fs", a.fs, "--states", str(a.states),
                 "--duration", a.duration, "--json", str(out)]
        for w in a.workload or ["sqlite-tpcb"]:
            argv_ += ["--workload", w]
        for s in a.sets:
            argv_ += ["--set", s]
        t0 = time.monotonic()
        proc = subprocess.run(argv_, capture_output=True, text=True, env={**os.environ, "PICKFS_WORKDIR": a.workdir})
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return proc.returncode
        for c in json.loads(out.read_text())["cells"]:
            crash = c["crash"]
            m = crash["metrics"]
            print(f"{c['config']}/{c['workload']}: {int(m['crash_states'])} states, "
                  f"{m.get('crash_states_per_s', 0):.2f} states/s while checking "
                  f"({m.get('crash_s_per_state', 0):.2f} s each); building images {m.get('crash_build_s', 0):.1f} s "
                  f"of {m.get('crash_check_s', 0):.1f} s; {crash['verdict']}")
        print(f"wall time of the whole crashtest: {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
