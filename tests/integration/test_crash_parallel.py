"""States checked two at a time judge each state as states checked one by one do: the same recording, the same
states (ones known to lose among them), verdict by verdict."""

import threading

import pytest

from pickfs.crash.identity import Identities
from pickfs.crash.runner import StateChecker, check_states, driver_for, recorded, workbenches, workers_for
from pickfs.crash.session import fuse_unavailable
from pickfs.crash.states import DEFAULT_UNIT, generate
from pickfs.model import WorkloadSpec
from pickfs.plan import resolve_fs_name
from pickfs.stack.ledger import Ledger
from pickfs.workloads import workload_class
from tests.conftest import ledger_entries, needs_root

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]


def verdicts(results):
    return [(r.index, r.same_as, r.mounted, r.fsck_ok, r.db_opened, r.consistent, r.lost, r.acked_before, r.torn)
            for r in sorted(results, key=lambda r: r.index)]


def test_two_checkers_at_once_give_the_verdict_of_one_on_every_state(workdir):
    ledger = Ledger(workdir / "ledger")
    config = resolve_fs_name("ext4-nobarrier")  # loses commits with synchronous=OFF and without barriers
    cls = workload_class("sqlite-tpcb")
    spec = WorkloadSpec("sqlite-tpcb", "off", tuple(sorted(cls.normalize({"synchronous": "OFF"}).items())))
    assert workers_for("sqlite") == 2
    driver = driver_for(spec, workdir)
    with recorded(config, spec, workdir, ledger, 256 * 1024**2, 1.5, 1, driver) as rec:
        # no recovery crashes: a recovery's own writes vary with timing between two checks of one state, whoever
        # checks it, so its second cut would not be the same state
        states = generate(rec.records, rec.t_start, rec.t_end, 30, seed=3, events=rec.events)
        identities = Identities(rec.log, rec.records, rec.first)
        ids = [identities.of(st.durable, st.kept) for st in states]

        def checked(workers):
            with workbenches(rec, ledger, workers, rewinds=False) as (benches, _):
                outcomes: dict = {}
                checkers = [StateChecker(config, bench, rec.base, ledger, driver, rec.acks, 1, DEFAULT_UNIT, None,
                                         "parallel", rec.t_start, rec.events, outcomes) for bench in benches]
                return verdicts(check_states(checkers, states, ids, threading.Event()))

        one = checked(1)
        two = checked(2)
    assert len(one) == len(two) == 30
    for a, b in zip(one, two):
        assert a == b, (a, b)
    assert any(v[6] for v in one), "no state lost a commit: the comparison would prove little"
    assert any(v[6] == 0 and v[1] < 0 for v in one), "every state lost: the comparison would prove little"
    assert ledger_entries(workdir) == []
