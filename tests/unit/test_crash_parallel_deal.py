"""Checking states at once: how they are dealt to the checkers, and what reaches the caller (no real checks)."""

import threading
import time

import pytest

from pickfs.crash.runner import PARALLEL, PROGRAM, check_states, dealt, workers_for
from pickfs.crash.states import CrashState


def state(i):
    return CrashState(i, cut=i, durable=i, kept=(), dropped=0, t_ns=i, mode="unflushed lost")


class Fake:
    """A checker that notes which thread checked which state."""

    def __init__(self, fail_at=-1, halt=None):
        self.seen, self.threads, self.fail_at, self.halt, self.after_halt = [], set(), fail_at, halt, 0

    def check(self, st, identity):
        if self.halt is not None and self.halt.is_set():
            self.after_halt += 1
        if st.index == self.fail_at:
            raise RuntimeError("mount failed")
        time.sleep(0.001 * (1 + (st.index * 7) % 5))  # checks end out of order
        self.seen.append(st.index)
        self.threads.add(threading.get_ident())
        return st  # stands for its result: check_states hands on what the checker returns


def test_every_state_of_one_identity_goes_to_one_checker_and_the_distinct_ones_in_turn():
    states = [state(i) for i in range(8)]
    ids = [10, 11, 10, None, 12, 11, None, 10]
    queues = dealt(states, ids, 2)
    assert [[s.index for s, _ in q] for q in queues] == [[0, 2, 3, 6, 7], [1, 4, 5]]
    for q in queues:  # each in the order of its cuts
        assert [s.cut for s, _ in q] == sorted(s.cut for s, _ in q)
    assert dealt(states, ids, 1) == [list(zip(states, ids))]


def test_two_checkers_check_every_state_once_in_their_own_threads():
    states = [state(i) for i in range(40)]
    a, b = Fake(), Fake()
    out = list(check_states([a, b], states, [None] * 40, threading.Event()))
    # handed on in the order of the states, whichever ended first: what is saved is a first part of them
    assert [s.index for s in out] == list(range(40))
    assert sorted(a.seen + b.seen) == list(range(40)) and a.seen and b.seen
    assert a.threads.isdisjoint(b.threads) and threading.get_ident() not in a.threads | b.threads


def test_a_halt_starts_no_more_states_and_a_workers_error_reaches_the_caller():
    states = [state(i) for i in range(40)]
    halt = threading.Event()
    checkers = [Fake(halt=halt), Fake(halt=halt)]
    out = []
    for r in check_states(checkers, states, [None] * 40, halt):
        out.append(r)
        halt.set()
    # no state started once halted (but one whose start raced the halt); those checked are all handed on
    assert all(c.after_halt <= 1 for c in checkers)
    assert len(out) == len(checkers[0].seen) + len(checkers[1].seen) < 40
    with pytest.raises(RuntimeError, match="mount failed"):
        list(check_states([Fake(fail_at=5), Fake(fail_at=5)], states, [None] * 40, threading.Event()))
    one = Fake()
    assert [s.index for s in check_states([one], states, [None] * 40, threading.Event())] == list(range(40))
    assert len(one.threads) == 1 and threading.get_ident() in one.threads  # one checker: in the caller's thread


def test_several_at_once_only_where_the_filesystem_allows_it_and_never_for_the_users_program():
    assert workers_for("sqlite", "ext4") == PARALLEL
    # xfs refuses to mount a second copy of a mounted filesystem (the same UUID) unless mounted nouuid, which a
    # station adds; btrfs takes the copies for devices of one filesystem
    assert workers_for("sqlite", "xfs") == PARALLEL and workers_for("sqlite", "btrfs") == 1
    assert workers_for("postgresql", "ext4") == PARALLEL and workers_for("mariadb", "ext3") == PARALLEL
    assert workers_for(PROGRAM, "ext4") == 1  # its check reads files of the test's own


def test_each_result_is_told_the_moment_its_check_ends_and_then_handed_on_in_the_order_of_the_states():
    states = [state(i) for i in range(40)]
    told = []
    out = list(check_states([Fake(), Fake()], states, [None] * 40, threading.Event(), told.append))
    assert [s.index for s in out] == list(range(40))  # handed on in order, as before
    assert sorted(s.index for s in told) == list(range(40))  # each told once
    assert [s.index for s in told] != list(range(40))  # in the order the checks ended (Fake's end out of order)
    # one checker: told in order, each before it is handed on
    seen = []
    for r in check_states([Fake()], states[:5], [None] * 5, threading.Event(), seen.append):
        assert seen[-1] is r
    assert [s.index for s in seen] == list(range(5))
