"""The fast check judges every state as the reference check does: the same recording, the same states (ones known
to lose among them), verdict by verdict. The reference is the check as it was: one workbench, one state at a time,
a client process, a loop device (with direct I/O) and a mount point made per state, a server started and stopped as
for a state kept. The fast one is what a crash test uses: workbenches side by side where the database and filesystem
allow it, each with its client process that stays up and its loop device kept for its states, reading through the
recorder's cache, and a server whose check nothing reads after it started for such a check and ended at once
(PostgreSQL: fsync=off, an immediate shutdown; MariaDB: killed)."""

import threading
from contextlib import ExitStack
from dataclasses import replace

import pytest

from pickfs import databases
from pickfs.crash.identity import Identities
from pickfs.crash.runner import (
    PARALLEL,
    StateChecker,
    check_states,
    checkers_for,
    driver_for,
    recorded,
    workbenches,
    workers_for,
)
from pickfs.crash.session import fuse_unavailable
from pickfs.crash.states import DEFAULT_UNIT, CrashState, generate
from pickfs.model import WorkloadSpec
from pickfs.plan import resolve_fs_name
from pickfs.services import base as service_base
from pickfs.stack.ledger import Ledger
from pickfs.workloads import workload_class
from tests.conftest import ledger_entries, needs_root

pytestmark = [needs_root, pytest.mark.skipif(fuse_unavailable() is not None, reason=str(fuse_unavailable()))]


def verdicts(results):
    return [(r.index, r.same_as, r.mounted, r.fsck_ok, r.db_opened, r.consistent, r.lost, r.acked_before, r.torn)
            for r in sorted(results, key=lambda r: r.index)]


@pytest.mark.parametrize(("preset", "workload", "settings", "n"), [
    # loses commits with synchronous=OFF and without barriers: states that lose and states that do not
    ("ext4-nobarrier", "sqlite-tpcb", {"synchronous": "OFF"}, 40),
    # SQLite's defaults (WAL, synchronous=FULL) without barriers
    ("ext4-nobarrier", "sqlite-tpcb", {}, 40),
    # a server per state, two at once
    ("ext4", "pgbench", {"full_page_writes": "off"}, 12),
    # PostgreSQL's defaults without barriers: states that lose commits, would not start or are inconsistent, beside
    # states that recover (a server started without fsync and ended at once must judge every one as the reference)
    ("ext4-nobarrier", "pgbench", {}, 16),
    # InnoDB's defaults without barriers: a server whose check nothing reads after it ended at once (killed), beside
    # states that lose commits or would not start
    ("ext4-nobarrier", "sysbench-oltp", {}, 12),
    # two copies of one xfs mounted at once (nouuid)
    ("xfs", "sqlite-tpcb", {"synchronous": "OFF"}, 24),
    # embedded Firebird: its engine in the client that stays up, its lock files off the state's filesystem; its
    # defaults break on torn pages (8 KiB pages, no protection), so some states fail and most do not
    ("ext4", "firebird-tpcb", {}, 24),
])
def test_the_fast_check_gives_the_reference_verdict_on_every_state(workdir, preset, workload, settings, n,
                                                                   monkeypatch):
    ended: list[bool] = []  # each server ended at once after its check, and whether it exited so
    end_at_once = service_base.end_at_once

    def counted(*args, **kwargs):
        ended.append(end_at_once(*args, **kwargs))
        return ended[-1]
    monkeypatch.setattr(service_base, "end_at_once", counted)
    cls = workload_class(workload)
    spec = WorkloadSpec(workload, "x", tuple(sorted(cls.normalize(settings).items())))
    adapter = type(databases.get(str(cls.database_for(spec))))
    discarded_settings = adapter.discarded_check_settings
    asked: list[dict] = []  # the settings of each check whose writes nothing reads after it

    def noted(self, chosen):
        asked.append(discarded_settings(self, chosen))
        return asked[-1]
    monkeypatch.setattr(adapter, "discarded_check_settings", noted)
    ledger = Ledger(workdir / "ledger")
    config = resolve_fs_name(preset)
    driver = driver_for(spec, workdir)
    with recorded(config, spec, workdir, ledger, 512 * 1024**2, 1.5, 1, driver) as rec:
        # no recovery crashes: a recovery's own writes vary with timing between two checks of one state, whoever
        # checks it, so its second cut would not be the same state
        drawn = generate(rec.records, rec.t_start, rec.t_end, n, seed=3, events=rec.events)
        # and a cut before the first commit was acknowledged: nothing to lose
        start = CrashState(0, cut=rec.first, durable=rec.first, kept=(), dropped=0, t_ns=rec.t_start,
                           mode="unflushed lost")
        states = [start, *(replace(st, index=st.index + 1) for st in drawn)]
        identities = Identities(rec.log, rec.records, rec.first)
        ids = [identities.of(st.durable, st.kept) for st in states]

        with workbenches(rec, ledger, 1, rewinds=False) as (benches, _):
            reference = StateChecker(config, benches[0], rec.base, ledger, driver, rec.acks, 1, DEFAULT_UNIT, None,
                                     "reference", rec.t_start, rec.events)
            old = verdicts(check_states([reference], states, ids, threading.Event()))
        assert ended == [] and asked == [], "the reference stopped a server at once, or opened a database without flushes"
        workers = workers_for(str(driver.backend), config.fstype)
        with workbenches(rec, ledger, workers, rewinds=False) as (benches, _), ExitStack() as stack:
            checkers = checkers_for(config, rec, ledger, driver, benches, stack, 1)
            new = verdicts(check_states(checkers, states, ids, threading.Event()))
            started = [c.started for checker in checkers if checker.standing for c in checker.standing.by_key.values()]
            # where each client that stayed up kept an embedded engine's lock files, and where states were mounted
            locks = [(c.env or {}).get("FIREBIRD_LOCK", "") for checker in checkers if checker.standing
                     for c in checker.standing.by_key.values()]
            mounts = [str(checker.station.mountpoint) for checker in checkers if checker.station]
    assert len(old) == len(new) == n + 1
    for a, b in zip(old, new):
        assert a == b, (a, b)
    # a client process per checker that checked a database, not per state (a checker whose states were all
    # duplicates, or would not mount, starts none)
    # (one more for each state whose database failed its check in an engine that runs in the client, embedded
    # Firebird: the engine ended its client as it opened the database, or the client ended after answering)
    assert started and len(started) <= len(checkers), started
    assert sum(started) <= len(started) + sum(1 for v in new if v[2] and (not v[4] or v[5] is False)), (started, new)
    assert workers == PARALLEL
    if workload == "firebird-tpcb":  # the engine's lock files: in the checker's own directory, never on a state
        assert locks and all(lock and not any(lock.startswith(m) for m in mounts) for lock in locks), (locks, mounts)
    assert asked, "no check was made as one nothing reads after"
    if workload in ("pgbench", "sysbench-oltp"):  # every server that opened was ended at once, and exited so
        assert ended and all(ended) and len(ended) >= sum(1 for v in new if v[1] < 0 and v[4]), (ended, new)
    else:
        assert ended == [], ended
    if workload == "sqlite-tpcb" or preset == "ext4-nobarrier":
        assert any(v[6] or not v[4] for v in old), "no state lost a commit: the comparison would prove little"
        assert any(v[6] == 0 and v[1] < 0 for v in old), ("every state lost: the comparison would prove little", old)
    assert ledger_entries(workdir) == []
