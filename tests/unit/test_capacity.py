"""The capacity search (engine/capacity.py, stats/capacity.py) on synthetic servers: fake commits with known
service times and stalls on a simulated clock."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from pickfs.clients.pacing import Book, arrival_times, paced
from pickfs.engine.capacity import STEP_ROUNDS, search
from pickfs.stats.capacity import LatencyTarget, Verdict, bracket, capacity, judge, next_rate, parse_target
from pickfs.stats.latency import Slice
from tests.unit.test_fixed_rate import FakeServer

TARGET = LatencyTarget(99.0, 0.010)


def fake_slice(server: FakeServer, rate: float, seconds: float, seed: int, round_no: int) -> Slice:
    book = Book()
    start = server.clock()
    paced(arrival_times(rate, "poisson", random.Random(seed), start), start + seconds, server.commit, book, 0.0,
          None, server.clock, server.sleep)
    server.now += 1.0  # the other configurations' slices: the backlog is gone by the next one
    return Slice(0, round_no, dict(book.from_schedule), book.due, book.late, book.skipped + book.unfinished, rate)


def run_search(servers: dict[str, FakeServer], start: float, ceiling: float | None = None):
    members = [SimpleNamespace(cell=SimpleNamespace(index=i, config=SimpleNamespace(name=name)), block=0)
               for i, name in enumerate(servers)]
    rates = {i: start for i in range(len(servers))}
    steps: list[dict[int, float]] = []

    def run_step(standing, failed, first_round):
        steps.append({m.cell.index: rates[m.cell.index] for m in standing})
        out = {}
        for m in standing:
            server = servers[m.cell.config.name]
            out[m.cell.index] = [fake_slice(server, rates[m.cell.index], 2.0, 1000 * first_round + r, r)
                                 for r in range(first_round, first_round + STEP_ROUNDS)]
        return out

    notes: list[str] = []
    verdicts = search(members, set(), rates, TARGET, ceiling, run_step, notes.append)
    return {name: capacity(verdicts[i]) for i, name in enumerate(servers)}, verdicts, steps, notes


def test_the_search_finds_each_servers_capacity_and_the_target_holds_there():
    caps, verdicts, steps, notes = run_search({"fast": FakeServer(0.001), "slow": FakeServer(0.003)}, start=100)
    fast, slow = caps["fast"], caps["slow"]
    # a 1 ms commit holds p99 <= 10 ms up to roughly 60-85% busy; a 3 ms commit to about 30-50%
    assert 450 <= fast.rate <= 900
    assert 80 <= slow.rate <= 200
    assert fast.rate > 3 * slow.rate
    for c in (fast, slow):
        assert c.lowest_failed is not None and c.lowest_failed / c.rate <= 1.2 + 1e-9  # bisected to 20%
        assert c.low <= c.rate and (c.high is None or c.high >= c.lowest_failed)
    for v in verdicts[0]:
        assert v.passed == (v.point_s <= TARGET.limit_s)
    # each step ran only the configurations still searching, side by side
    assert all(set(s) <= {0, 1} for s in steps) and any(len(s) == 1 for s in steps)
    assert any("capacity" in n for n in notes)


def test_a_server_stalling_200ms_every_second_holds_the_target_at_no_rate():
    caps, verdicts, _, _ = run_search({"stalls": FakeServer(0.001, stall=0.2)}, start=100)
    assert caps["stalls"].rate < 5
    assert all(v.point_s >= 0.1 for v in verdicts[0] if v.rate >= 10)  # p99 from the schedule shows the stall


def test_the_search_stops_at_the_clients_ceiling():
    caps, verdicts, steps, _ = run_search({"fast": FakeServer(0.0001)}, start=100, ceiling=400)
    assert max(s[0] for s in steps) == 400
    assert caps["fast"].rate == 400 and caps["fast"].lowest_failed is None and caps["fast"].high is None


def v(rate: float, passed: bool, sure: bool = True) -> Verdict:
    return Verdict(rate, 0.001 if passed else 0.01, None, None, 0.0, passed, sure)


def test_next_rate_doubles_halves_then_bisects():
    assert next_rate([v(100, True)], None) == 200
    assert next_rate([v(100, True)], 150) == 150
    assert next_rate([v(100, False)], None) == 50
    assert next_rate([v(100, True), v(200, False)], None) == pytest.approx(141.42, abs=0.01)
    assert next_rate([v(100, True), v(115, False)], None) is None
    assert next_rate([v(1.5, False)], None) == 1.0  # halving would pass the floor: the floor itself, once
    assert next_rate([v(1.5, False), v(1.0, False)], None) is None  # the target is met at no rate worth judging
    assert next_rate([v(20, False)], None, floor=12.5) == 12.5


def test_the_lowest_rate_judged_holds_enough_transactions_for_the_percentile():
    from pickfs.engine.capacity import lowest_rate

    assert lowest_rate(LatencyTarget(99.0, 0.005), 2.0) == pytest.approx(12.5)  # 4 slices x 2 s x 12.5/s = 100
    assert lowest_rate(LatencyTarget(99.9, 0.005), 1.0) == pytest.approx(250)
    assert lowest_rate(LatencyTarget(50.0, 0.005), 2.0) == 1.0


def test_bracket_and_interval_take_the_lowest_failure_and_only_sure_decisions():
    vs = [v(100, True), v(200, False, sure=False), v(141, True, sure=False), v(400, False), v(300, True)]
    assert bracket(vs) == (141, 200)
    c = capacity(vs)
    assert (c.rate, c.low, c.high, c.lowest_failed) == (141, 100, 400, 200)


def test_judge_counts_skipped_transactions_beyond_the_target():
    ok = Slice(0, 0, {1000: 100}, 100, 0, 0, 50.0)
    many_skipped = Slice(0, 0, {1000: 95}, 100, 0, 5, 50.0)
    assert judge([ok] * 4, TARGET, 50).passed
    j = judge([many_skipped] * 4, TARGET, 50)
    assert not j.passed and j.sure


@pytest.mark.parametrize("text, q, limit", [("p99<=5ms", 99, 0.005), (" p99.9 <= 250us ", 99.9, 0.00025),
                                             ("P50<1s", 50, 1.0)])
def test_targets_are_parsed(text, q, limit):
    t = parse_target(text)
    assert (t.q, t.limit_s) == (q, pytest.approx(limit))


@pytest.mark.parametrize("text", ["99<=5ms", "p99<=5", "p100<=5ms", "p99<=0ms", "p99>=5ms", ""])
def test_bad_targets_are_refused(text):
    with pytest.raises(ValueError):
        parse_target(text)
