"""A capacity search interrupted by Ctrl-C and resumed (`--resume`) continues from the rates it had measured:
its first step is not run again, and nothing of the run is left mounted or attached."""

import signal
import sqlite3

from tests.conftest import needs_root, pickfs, start_pickfs
from tests.integration.test_fixed_rate import SHORT, fixed_rate_trials
from tests.integration.test_interrupt import assert_clean, wait_for

pytestmark = needs_root

SEARCH = ("run", "--workload", "sqlite-tpcb", "--latency-target", "p99<=2s", "--rate", "20/s", "--max-time", "60s",
          *SHORT)
STEP = 4 * 2  # STEP_ROUNDS rounds of both configurations


def capacity_slices(workdir) -> int:
    db = workdir / "results.db"
    if not db.exists():
        return 0
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM trials WHERE phase='capacity' AND ok=1").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def test_an_interrupted_capacity_search_resumes_from_the_rates_measured(workdir):
    proc = start_pickfs(workdir, *SEARCH)
    try:
        assert wait_for(lambda: capacity_slices(workdir) >= STEP + 2, timeout=240)  # into the second step
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert_clean(workdir)
    before = fixed_rate_trials(workdir, "capacity")
    conn = sqlite3.connect(workdir / "results.db")
    [(run_id,)] = conn.execute("SELECT id FROM runs").fetchall()
    conn.close()

    r = pickfs(workdir, "run", "--resume", run_id)
    assert r.returncode == 0, r.stderr
    assert "resumed from" in r.stderr + r.stdout  # said as it starts
    after = fixed_rate_trials(workdir, "capacity")[len(before):]
    assert after, "the resumed search ran no step"
    # it went on at the rates the search had reached (20/s passed: 40/s or beyond), never again from 20/s
    assert {doc["fixed_rate"]["offered"] for _, _, doc in after} and \
        min(doc["fixed_rate"]["offered"] for _, _, doc in after) >= 40.0
    assert "the highest rate held with p99 <= 2 s" in r.stdout
    assert_clean(workdir)
