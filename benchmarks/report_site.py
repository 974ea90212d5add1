"""How long `pickfs report --site` takes over a results store of 30 runs: the real runs kept in
tests/data/real-runs.db.gz copied under new ids (6 copies of each of the 5; every plan then run 6 times or
more, so the site also has its comparison pages). Times the site builder in-process (each run loaded from the
store, then every page made; no disk writes) and the whole command as a user runs it (start-up included), the
median of --repeats of each. Pure CPU: no root, no mount.

    .venv/bin/python benchmarks/report_site.py [--copies 6] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pickfs.report.site import build_site
from pickfs.store import ResultStore

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "real-runs.db.gz"


def copied_store(path: Path, copies: int) -> int:
    """The real runs, each `copies` times under new ids (the first copy the original); the number of runs."""
    path.write_bytes(gzip.decompress(DATA.read_bytes()))
    conn = sqlite3.connect(path)
    with conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM runs")]
        run_cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
        trial_cols = [r[1] for r in conn.execute("PRAGMA table_info(trials)") if r[1] != "id"]
        for k in range(1, copies):
            for old in ids:
                new = f"{old[:-4]}{k:x}{old[-3:]}"  # the same shape as a run id
                conn.execute(f"INSERT INTO runs ({', '.join(run_cols)}) SELECT ?, created + ?, "
                             f"{', '.join(run_cols[2:])} FROM runs WHERE id = ?", (new, k * 3600.0, old))
                conn.execute(f"INSERT INTO trials ({', '.join(trial_cols)}) SELECT ?, {', '.join(trial_cols[1:])} "
                             "FROM trials WHERE run_id = ? ORDER BY id", (new, old))
    n = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    conn.close()
    return int(n)


def in_process(db: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    store = ResultStore(db)
    records = [store.load(r.id) for r in store.list_runs()]
    files = build_site(records)
    store.close()
    return time.perf_counter() - t0, len(files)


def command(db: Path, work: Path) -> float:
    site = work / f"site-{time.monotonic_ns()}"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pickfs", "report", "--site", str(site), "--results", str(db),
                    "--workdir", str(work)], check=True, capture_output=True)
    took = time.perf_counter() - t0
    shutil.rmtree(site)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pickfs-bench-site-") as tmp:
        work = Path(tmp)
        db = work / "results.db"
        runs = copied_store(db, a.copies)
        builds = [in_process(db) for _ in range(a.repeats)]
        cli = [command(db, work) for _ in range(a.repeats)]
        pages = builds[0][1]
        print(f"{runs} runs, {pages} files in the site")
        print(f"site builder (load + pages): median {statistics.median(t for t, _ in builds):.2f} s "
              f"({', '.join(f'{t:.2f}' for t, _ in builds)})")
        print(f"pickfs report --site:        median {statistics.median(cli):.2f} s ({', '.join(f'{t:.2f}' for t in cli)})")


if __name__ == "__main__":
    main()
