"""Fixed-rate (open-loop) runs: the arrival schedule, latency from the schedule, late/skipped/unfinished
counts, on a synthetic server (a fake commit with known service times and stalls on a simulated clock)."""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from pickfs.clients.pacing import Book, arrival_times, paced, summary
from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.stats.latency import percentile_us
from pickfs.workloads.latency import parse_rate, rate_args, rate_metrics, rate_notes
from pickfs.workloads.sqlite_tpcb import SqliteTpcb
from pickfs.workloads.tpcc import Tpcc


class FakeServer:
    """A simulated clock and a commit that takes `service` seconds, except that the server stalls for
    `stall` seconds at the start of every second (a commit running into a stall ends when it ends)."""

    def __init__(self, service: float, stall: float = 0.0, every: float = 1.0, fail_every: int = 0) -> None:
        self.now = 100.0
        self.service, self.stall, self.every, self.fail_every = service, stall, every, fail_every
        self.commits = 0

    def clock(self) -> float:
        self.now += 1e-7  # reading the clock takes a little time, as it does
        return self.now

    def sleep(self, s: float) -> None:
        self.now += max(0.0, s)

    def commit(self) -> bool:
        self.commits += 1
        start = self.now
        phase = (start - 100.0) % self.every
        end = start + self.service
        if self.stall and phase < self.stall:  # the server is stalled: wait it out
            end = start - phase + self.stall + self.service
        self.now = end
        return not (self.fail_every and self.commits % self.fail_every == 0)


def run_paced(server: FakeServer, rate: float, seconds: float, limit: float = 0.0, arrivals: str = "poisson",
              drain: float | None = None) -> Book:
    book = Book()
    start = server.clock()
    schedule = arrival_times(rate, arrivals, random.Random(7), start)
    paced(schedule, start + seconds, server.commit, book, limit, drain, server.clock, server.sleep)
    return book


def closed_loop_p99(server: FakeServer, seconds: float) -> float:
    hist: dict[int, int] = {}
    end = server.clock() + seconds
    while server.clock() < end:
        t0 = server.clock()
        server.commit()
        us = int((server.clock() - t0) * 1e6)
        hist[us] = hist.get(us, 0) + 1
    return (percentile_us(hist, 99) or 0) / 1e6


# -- the arrival schedule ----------------------------------------------------------------------------
def test_poisson_arrivals_have_the_rate_and_exponential_gaps():
    times = arrival_times(500.0, "poisson", random.Random(1), 0.0)
    ts = [next(times) for _ in range(20000)]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert statistics.fmean(gaps) == pytest.approx(1 / 500, rel=0.03)
    assert statistics.stdev(gaps) / statistics.fmean(gaps) == pytest.approx(1.0, abs=0.05)  # exponential: CV 1
    assert all(g >= 0 for g in gaps)


def test_uniform_arrivals_are_evenly_spaced_from_their_phase():
    times = arrival_times(100.0, "uniform", random.Random(1), 10.0, phase=0.5)
    ts = [next(times) for _ in range(5)]
    assert ts[0] == pytest.approx(10.005)
    assert [round(b - a, 9) for a, b in zip(ts, ts[1:])] == [0.01] * 4


@pytest.mark.parametrize("rate, arrivals", [(0.0, "poisson"), (-1.0, "poisson"), (10.0, "bursty")])
def test_bad_schedules_are_refused(rate, arrivals):
    with pytest.raises(ValueError):
        next(arrival_times(rate, arrivals, random.Random(1), 0.0))


# -- latency from the schedule, on a synthetic server ----------------------------------------------------
def test_a_fast_server_keeps_up_and_every_transaction_is_accounted_for():
    server = FakeServer(service=0.001)
    book = run_paced(server, rate=100, seconds=10)
    assert book.due == book.done + book.skipped + book.unfinished + book.failed
    assert book.due == pytest.approx(1000, rel=0.1)
    assert book.unfinished == book.skipped == book.failed == 0
    p99 = percentile_us(book.from_schedule, 99) / 1e6
    assert 0.001 <= p99 < 0.01  # the service time, plus a queue now and then at 10% load


def test_a_stall_counts_against_every_transaction_it_held_up_coordinated_omission():
    """200 ms stalls once a second: closed-loop latency hides them at p99, the schedule does not."""
    seconds = 20
    closed = closed_loop_p99(FakeServer(service=0.001, stall=0.2), seconds)
    assert closed < 0.005  # one slow commit in ~800 a second: below the 99th percentile
    book = run_paced(FakeServer(service=0.001, stall=0.2), rate=100, seconds=seconds)
    p99 = percentile_us(book.from_schedule, 99) / 1e6
    assert p99 >= 0.1  # a fifth of the arrivals come during a stall and wait up to 200 ms
    assert book.late / book.due > 0.15  # they could not start in time, and are counted as late
    # measured from the actual start instead (what a closed-loop client reports), the stall disappears
    assert percentile_us(book.service, 50) / 1e6 < 0.002


def test_the_latency_limit_skips_transactions_already_too_late_and_counts_them():
    book = run_paced(FakeServer(service=0.001, stall=0.2), rate=100, seconds=10, limit=0.05)
    assert book.skipped > 0
    assert book.due == book.done + book.skipped + book.unfinished + book.failed
    lag = percentile_us(book.lag, 100) / 1e6
    assert lag <= 0.05 + 0.002  # nothing began later than the limit


def test_the_backlog_is_drained_for_at_most_one_window_and_the_rest_is_counted_unfinished():
    server = FakeServer(service=0.02)  # 50 tx/s at most, offered 200/s
    start = server.now
    book = run_paced(server, rate=200, seconds=1.0, drain=0.5)
    assert book.unfinished > 0
    assert book.due == book.done + book.skipped + book.unfinished + book.failed
    assert book.done == pytest.approx(75, abs=3)  # 1.5 s of 20 ms commits
    assert server.now - start < 1.5 + 0.03  # nothing ran on after the drain: the next slice starts clean


def test_failed_transactions_are_counted_not_dropped():
    book = run_paced(FakeServer(service=0.001, fail_every=10), rate=100, seconds=5)
    assert book.failed == pytest.approx(book.due / 10, abs=2)
    assert book.due == book.done + book.failed


def test_uniform_arrivals_at_low_load_are_never_late():
    book = run_paced(FakeServer(service=0.001), rate=100, seconds=5, arrivals="uniform")
    assert book.late == 0 and book.done == book.due


# -- settings and figures --------------------------------------------------------------------------
def test_the_default_job_has_no_fixed_rate_settings():
    assert "rate" not in SqliteTpcb.normalize({})
    assert "rate" not in Tpcc.normalize({})
    assert rate_args(SqliteTpcb.normalize({})) == []


def test_rate_settings_are_checked():
    s = SqliteTpcb.normalize({"rate": "400/s", "latency_limit": "50ms", "arrivals": "Uniform"})
    assert (s["rate"], s["latency_limit"], s["arrivals"]) == (400.0, 0.05, "uniform")
    assert rate_args(s) == ["--rate", "400.0", "--arrivals", "uniform", "--latency-limit", "0.05"]
    assert parse_rate(" 250 ") == 250.0
    for bad in ({"rate": "fast"}, {"rate": -3}, {"rate": 10, "arrivals": "bursty"}, {"arrivals": "uniform"},
                {"rate": "inf"}):
        with pytest.raises(PlanError):
            SqliteTpcb.normalize(bad)


def test_rate_figures_and_notes_from_a_client_document():
    book = run_paced(FakeServer(service=0.001, stall=0.2), rate=100, seconds=5, limit=0.1)
    doc = {"elapsed_s": 5.0, "client_cpu_s": 4.9, "fixed_rate": summary(book, 100.0, "poisson", 0.1, 5.0)}
    m = rate_metrics(json.loads(json.dumps(doc["fixed_rate"])))
    assert m["offered_rate"] == 100.0
    assert m["sched_p50"] <= m["sched_p99"] <= m["sched_p999"]
    assert m["skipped_share"] == pytest.approx(book.skipped / book.due)
    notes = rate_notes(doc)
    assert any("CPU-bound" in n for n in notes) and any("were not run" in n for n in notes)
    assert rate_notes({"elapsed_s": 5.0, "client_cpu_s": 1.0}) == []


def test_the_tpcb_client_runs_at_a_fixed_rate_for_real(tmp_path: Path):
    """The real client on SQLite: about rate x duration transactions due, each accounted for."""
    db = tmp_path / "t.db"
    base = [sys.executable, "-m", "pickfs.clients.tpcb"]
    subprocess.run([*base, "load", "--backend", "sqlite", "--db", str(db), "--synchronous", "OFF"], check=True,
                   capture_output=True, timeout=120)
    out = subprocess.run([*base, "run", "--backend", "sqlite", "--db", str(db), "--synchronous", "OFF",
                          "--duration", "1.5", "--rate", "200", "--seed", "3"],
                         check=True, capture_output=True, text=True, timeout=120)
    doc = json.loads(out.stdout)
    block = doc["fixed_rate"]
    assert 200 <= block["due"] <= 400
    assert block["due"] == block["done"] + block["skipped"] + block["unfinished"] + block["failed"]
    assert doc["transactions"] == block["done"]
    m = SqliteTpcb.parse(out.stdout)
    assert m["sched_p99"] >= m["lat_p50"]  # from the schedule: never shorter than the service itself


# -- the client's own limits, measured in memory ----------------------------------------------------------
def _spec(name: str, **settings) -> WorkloadSpec:
    from pickfs.workloads import workload_class

    return WorkloadSpec(name, name, tuple(sorted(workload_class(name).normalize(settings).items())))


def test_a_rate_beyond_the_clients_ceiling_is_flagged_and_one_within_is_not():
    from pickfs.engine.ceiling import Ceiling, flag

    c = Ceiling(max_rate=1000.0, probe_rate=500.0, lag_p50_s=1e-5, lag_p99_s=8e-5, cpu_share=0.95)
    assert flag(_spec("sqlite-tpcb", rate=950), c) is not None
    assert flag(_spec("sqlite-tpcb", rate=500), c) is None
    assert "1,000 tx/s" in c.words() and "p99 80 us" in c.words()


def test_server_workloads_say_how_to_see_their_ceiling():
    from pickfs.engine.ceiling import in_memory_possible, limit_notes
    from pickfs.stack.ledger import Ledger

    assert "tmpfs preset" in (in_memory_possible(_spec("tpcc", backend="postgresql", rate=100)) or "")
    assert limit_notes(_spec("sqlite-tpcb"), Ledger(Path("/nonexistent/ledger"))) == []  # closed loop: nothing measured


def test_the_ceiling_is_measured_in_memory_in_a_directory_the_ledger_holds_first(tmp_path: Path):
    from pickfs.engine import ceiling
    from pickfs.stack.ledger import Ledger

    ledger = Ledger(tmp_path / "work" / "ledger")
    recorded: list[tuple[Path, bool]] = []
    real = ledger.record

    def record(kind: str, **fields: object):  # what was recorded, and whether it existed already
        recorded.append((Path(str(fields["path"])), Path(str(fields["path"])).exists()))
        return real(kind, **fields)

    ledger.record = record  # type: ignore[method-assign]
    c = ceiling.measure(_spec("sqlite-tpcb", rate=100, synchronous="OFF"), ledger, seconds=0.5)
    assert c.max_rate > 100 and c.probe_rate == 100
    assert 0 <= c.lag_p50_s <= c.lag_p99_s < 1.0
    assert [(p.parent, existed) for p, existed in recorded] == [(ceiling.SHM, False)]
    assert not recorded[0][0].exists() and ledger.entries() == []


def test_a_plan_file_takes_a_rate_and_a_latency_target(tmp_path: Path):
    from pickfs.plan import load_plan_file

    good = tmp_path / "p.toml"
    good.write_text('fs = ["ext4", "xfs"]\n[method]\nlatency_target = "p99<=5ms"\n'
                    '[[workload]]\nname = "sqlite-tpcb"\nrate = "400/s"\narrivals = "uniform"\n')
    plan = load_plan_file(good)
    assert plan.method.latency_target == "p99<=5ms"
    assert (plan.workloads[0].get("rate"), plan.workloads[0].get("arrivals")) == (400.0, "uniform")
    bad = tmp_path / "b.toml"
    bad.write_text('fs = ["ext4"]\n[method]\nlatency_target = "fast"\n[[workload]]\nname = "sqlite-tpcb"\n')
    with pytest.raises(PlanError, match="latency target"):
        load_plan_file(bad)


def test_the_cli_refuses_bad_fixed_rate_flags_in_one_line(tmp_path: Path):
    import os

    env = {**os.environ, "PICKFS_WORKDIR": str(tmp_path)}
    for args, said in ((["--rate", "fast"], "is not a rate"), (["--rate", "100", "--workload", "wal"], "no fixed-rate"),
                       (["--rate", "100", "--workload", "fileio"], "fileio.read_share=0 (writes)"),
                       (["--latency-target", "p99<=5ms", "--workload", "fileio"], "not a mix"),
                       (["--latency-target", "p99"], "not a latency target"),
                       (["--latency-target", "p99<=5ms", "--one-at-a-time"], "side by side"),
                       (["--rate", ""], "--rate is empty"), (["--latency-target", ""], "--latency-target is empty"),
                       (["--latency-target", "p99<=5ms", "--workload", "wal"], "no fixed-rate mode")):
        r = subprocess.run([sys.executable, "-m", "pickfs", "run", "--dry-run", *args], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


def test_waits_at_realtime_priority_as_root_and_back_to_normal_for_the_work():
    import os

    from pickfs.clients.pacing import Waits

    assert Waits(wanted=False).realtime is False
    w = Waits()
    assert w.realtime == (os.geteuid() == 0)  # root may; anyone else falls back to normal waits
    w.waiting()
    if w.realtime:
        assert os.sched_getscheduler(0) == os.SCHED_FIFO
    w.working()
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    # paced() raises the priority only while waiting: on the synthetic server every commit runs at normal priority
    server, seen = FakeServer(0.001), []

    def commit() -> bool:
        seen.append(os.sched_getscheduler(0))
        return server.commit()

    book = Book()
    start = server.clock()
    paced(arrival_times(200, "poisson", random.Random(1), start), start + 0.5, commit, book, 0.0, None,
          server.clock, server.sleep, waits=w)
    assert seen and set(seen) == {os.SCHED_OTHER} and os.sched_getscheduler(0) == os.SCHED_OTHER
