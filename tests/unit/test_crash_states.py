"""Power-cut states from a write log, the log format and its replay, and counting lost commits."""

import os

import pytest

from pickfs.crash import log as wlog
from pickfs.crash.states import MODES, crash_moments, generate, losses, parse_acks, window


def rec(kind, t, offset=0, length=0):
    return wlog.Record(kind, t, offset, length, 0)


W, F = wlog.WRITE, wlog.FLUSH


def test_window_is_the_records_that_arrived_while_the_workload_ran():
    records = [rec(W, t) for t in (5, 10, 20, 30, 40)]
    assert window(records, 10, 30) == (2, 4)
    assert window(records, 100, 200) == (5, 5)


def test_states_keep_everything_up_to_the_last_flush_and_treat_later_writes_by_mode():
    # before the workload: 2 writes; then W W F W W W F W W
    kinds = [W, W, W, W, F, W, W, W, F, W, W]
    records = [rec(k, 100 + i) for i, k in enumerate(kinds)]
    states = generate(records, t_start=101, t_end=200, n=9, seed=3)
    assert [s.mode for s in states[:3]] == list(MODES)
    for s in states:
        assert s.durable <= s.cut
        flushes = [i for i in range(2, s.cut) if records[i].kind == F]
        assert s.durable == (flushes[-1] + 1 if flushes else 2)
        volatile = [i for i in range(s.durable, s.cut) if records[i].kind == W]
        assert set(s.kept) <= set(volatile) and len(s.kept) + s.dropped == len(volatile)
        if s.mode == "unflushed lost":
            assert s.kept == ()
        if s.mode == "unflushed kept":
            assert list(s.kept) == volatile
        assert s.applied(2)[: s.durable - 2] == list(range(2, s.durable))
    assert generate(records, 101, 200, 9, seed=3) == states  # reproducible


def test_the_cut_moment_runs_until_the_next_record():
    records = [rec(W, 10), rec(F, 20), rec(W, 50)]
    moments = crash_moments(records, t_start=5, t_end=100, n=3)
    assert (3, 100) in moments  # after the last record: the power may fail any time until the end
    for cut, moment in moments:
        if cut < len(records):
            assert moment < records[cut].t_ns


def test_a_window_without_writes_still_gets_n_states():
    # a database that acknowledged commits but wrote nothing (synchronous=OFF): same image, later and later cuts
    records = [rec(W, 1), rec(F, 2)]
    states = generate(records, t_start=10, t_end=1000, n=5)
    assert len(states) == 5
    assert all(s.cut == 2 and s.kept == () for s in states)
    assert sorted(s.t_ns for s in states) == [s.t_ns for s in states] and states[-1].t_ns == 1000


def test_losses_count_only_commits_acknowledged_before_the_cut():
    acks = {1: 100, 2: 200, 3: 300, 4: 400}
    loss = losses(acks, present={1, 2}, t_cut=350)
    assert loss.lost == (3,)  # 4 was acknowledged after the cut: not owed
    assert loss.seconds == pytest.approx(50e-9)
    assert losses(acks, {1, 2, 3, 4}, 10**9).lost == ()
    assert parse_acks("1 100\n2 200\n3 3") == {1: 100, 2: 200, 3: 3}
    assert parse_acks("1 100\n2 20") == {1: 100, 2: 20} and parse_acks("1 100\n2") == {1: 100}


def test_the_log_replayed_gives_the_image_and_a_torn_record_is_dropped(tmp_path):
    log = tmp_path / "writes.log"
    with open(log, "wb") as fh:
        fh.write(wlog.encode(W, 1, 4096, 5) + b"hello")
        fh.write(wlog.encode(F, 2))
        fh.write(wlog.encode(wlog.ZERO, 3, 4096, 2))
        fh.write(wlog.encode(W, 4, 0, 3) + b"abc")
        fh.write(wlog.encode(W, 5, 0, 100) + b"torn")  # the daemon died mid-record
    records = wlog.read_log(log)
    assert [r.kind for r in records] == [W, F, wlog.ZERO, W]
    image = tmp_path / "img"
    image.write_bytes(b"\xff" * 8192)
    assert wlog.apply(log, records, image) == 3
    data = image.read_bytes()
    assert data[:3] == b"abc" and data[4096:4101] == b"\0\0llo" and len(data) == 8192
    assert os.path.getsize(image) == 8192
