"""How fast does a crash test explore power-cut states? States per second per database, and the wall time
of one configuration with many states.

Runs `pickfs crashtest` (real recorder, real filesystems, real servers) for each workload given and
prints, per cell: the states tried, the distinct ones checked (a duplicate takes an earlier check's
findings) and the share of duplicates, distinct states per second while checking, seconds building
images (base that follows the durable writes, copied per state) against checking them, what the
states cut at random moments rule out, and the wall time of the whole command, with the machine's
load average before and after (figures from a machine that was not quiet say so there). Needs root;
wrap it in the disk lock:

    flock /tmp/pickfs-disk.lock .venv/bin/python benchmarks/crash_states_speed.py --fs ext4 \\
        --workload sqlite-tpcb --states 200
    flock /tmp/pickfs-disk.lock .venv/bin/python benchmarks/crash_states_speed.py --fs ext4 --crash-time 2m

`--default` runs the command as users run it, with neither (its own time budget per cell): one workload and one
filesystem make one cell, so the wall time printed is that cell's, recording and all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
    p.add_argument("--states", type=int, default=None, help="exactly this many [200 without --crash-time]")
    p.add_argument("--crash-time", default=None, help="a budget of checking time per configuration, e.g. 2m")
    p.add_argument("--default", action="store_true",
                   help="the default command: neither --states nor --crash-time (its own budget per cell)")
    p.add_argument("--duration", default="3s")
    p.add_argument("--workdir", default="/var/tmp/pickfs-crash-bench")
    a = p.parse_args(argv)
    # the JSON beside, not in, the work directory: pickfs makes that one itself (and refuses one it did not make
    # that holds something)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "crash.json"
        argv_ = [sys.executable, "-m", "pickfs", "crashtest", "--fs", a.fs, "--duration", a.duration, "--json", str(out)]
        if a.default and (a.states is not None or a.crash_time is not None):
            p.error("--default runs the command as users do: without --states or --crash-time")
        if not a.default and (a.states is not None or a.crash_time is None):
            argv_ += ["--states", str(a.states or 200)]
        if a.crash_time is not None:
            argv_ += ["--crash-time", a.crash_time]
        for w in a.workload or ["sqlite-tpcb"]:
            argv_ += ["--workload", w]
        for s in a.sets:
            argv_ += ["--set", s]
        load_before = os.getloadavg()
        t0 = time.monotonic()
        proc = subprocess.run(argv_, capture_output=True, text=True, env={**os.environ, "PICKFS_WORKDIR": a.workdir})
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return proc.returncode
        for c in json.loads(out.read_text())["cells"]:
            crash = c["crash"]
            m = crash["metrics"]
            tried = int(m["crash_states"])
            distinct = int(m.get("crash_distinct_states", tried))
            print(f"{c['config']}/{c['workload']}: {tried} states tried, {distinct} distinct checked "
                  f"({1 - distinct / tried if tried else 0:.0%} duplicates), "
                  f"{m.get('crash_distinct_per_s', m.get('crash_states_per_s', 0)):.2f} distinct states/s while "
                  f"checking; building images {m.get('crash_build_s', 0):.1f} s of {m.get('crash_check_s', 0):.1f} s; "
                  f"{int(m.get('crash_drawn_states', 0))} distinct states cut at random moments, "
                  f"{int(m.get('crash_drawn_failed', 0))} of them failing; {crash['verdict']}")
            print(f"  {c['config']}/{c['workload']}: {m.get('crash_check_s', 0):.0f} s checking states")
            own = sorted((st["seconds"], st.get("problem", "")) for st in crash.get("states", ())
                         if st.get("same_as", -1) < 0)
            if own:  # one state that waits out a time limit can hide the pace of all the others
                print(f"  a distinct state's check: median {statistics.median(x for x, _ in own):.3f} s, slowest "
                      f"{own[-1][0]:.1f} s{f' ({own[-1][1][:100]})' if own[-1][1] else ''}")
        print(f"wall time of the whole crashtest: {wall:.0f} s; load average before "
              f"{' '.join(f'{x:.2f}' for x in load_before)}, after {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              f"on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
