"""Power-cut states from a write log, the log format and its replay, and counting lost commits."""

import os
import random

import pytest

from pickfs.crash import log as wlog
from pickfs.crash.log import Piece
from pickfs.crash.states import (
    STRATEGIES,
    Event,
    choose,
    crash_moments,
    exposed_flushes,
    generate,
    losses,
    parse_acks,
    parse_events,
    recovery_crash,
    units_of,
    when,
    window,
)


def rec(kind, t, offset=0, length=0):
    return wlog.Record(kind, t, offset, length, 0)


W, F = wlog.WRITE, wlog.FLUSH


def test_window_is_the_records_that_arrived_while_the_workload_ran():
    records = [rec(W, t) for t in (5, 10, 20, 30, 40)]
    assert window(records, 10, 30) == (2, 4)
    assert window(records, 100, 200) == (5, 5)


def test_states_keep_everything_up_to_the_last_flush_and_treat_later_writes_by_strategy():
    # before the workload: 2 writes; then W W F W W W F W W
    kinds = [W, W, W, W, F, W, W, W, F, W, W]
    records = [rec(k, 100 + i, 4096 * i, 4096) for i, k in enumerate(kinds)]
    states = generate(records, t_start=101, t_end=200, n=12, seed=3)
    assert {"unflushed lost", "unflushed kept", "torn writes"} <= {s.mode for s in states} <= set(STRATEGIES)
    for s in states:
        assert s.durable <= s.cut
        flushes = [i for i in range(2, s.cut) if records[i].kind == F]
        assert s.durable == (flushes[-1] + 1 if flushes else 2)
        volatile = [i for i in range(s.durable, s.cut) if records[i].kind == W]
        assert {p.record for p in s.kept} <= set(volatile) and len(s.kept) + s.dropped == s.units == len(volatile)
        if s.mode == "unflushed lost":
            assert s.kept == ()
        if s.mode == "unflushed kept":
            assert [p.record for p in s.kept] == volatile
        if s.mode == "newest dropped" and volatile:
            assert [p.record for p in s.kept] == volatile[:-1]
        if s.mode == "one write dropped" and volatile:
            assert len({p.record for p in s.kept}) == len(volatile) - 1
        assert [p.record for p in s.applied(2)][: s.durable - 2] == list(range(2, s.durable))
    assert generate(records, 101, 200, 12, seed=3) == states  # reproducible
    at_bursts = [s for s in states if not s.why.startswith("evenly")]
    assert at_bursts and at_bursts[0].mode == "torn writes"  # the first moment at a burst tears


def test_a_write_is_torn_into_units_on_the_image_offsets():
    records = [rec(W, 1, 6144, 10240)]  # 6 KiB .. 16 KiB: 2 KiB, then 4 KiB and 4 KiB
    assert units_of(records, 0, 4096) == [Piece(0, 0, 2048), Piece(0, 2048, 4096), Piece(0, 6144, 4096)]
    assert len(units_of(records, 0, 512)) == 20
    assert units_of([rec(W, 1, 4096, 4096)], 0, 4096) == [Piece(0)]  # one whole unit: the record itself
    assert units_of([rec(F, 1)], 0, 4096) == [Piece(0)]


def test_torn_writes_keep_some_units_of_each_page_and_random_subsets_reorder():
    # a 16 KiB page written after the last flush, then a second write: the torn state keeps part of the page
    records = [rec(W, 1, 0, 4096), rec(F, 2), rec(W, 3, 16384, 16384), rec(W, 4, 65536, 4096)]
    rng = random.Random(5)
    kept, dropped, units, torn = choose(records, 2, 4, "torn writes", 4096, rng)
    assert units == 5 and torn == 1 and 1 <= dropped <= 3
    page = [p for p in kept if p.record == 2]
    assert 1 <= len(page) <= 3 and all(p.length == 4096 for p in page)
    assert Piece(3) in kept  # everything else landed
    # random subsets: over many draws, the later write lands without the earlier one (reordering) and pages tear
    seen_reordered = seen_torn = False
    for seed in range(40):
        kept, _, _, torn = choose(records, 2, 4, "random subset", 4096, random.Random(seed))
        seen_torn |= torn > 0
        seen_reordered |= Piece(3) in kept and not any(p.record == 2 for p in kept)
    assert seen_torn and seen_reordered


def test_torn_pieces_replay_half_a_page_old_and_half_new(tmp_path):
    log = tmp_path / "writes.log"
    with open(log, "wb") as fh:
        fh.write(wlog.encode(W, 1, 0, 8192) + b"N" * 8192)
    records = wlog.read_log(log)
    image = tmp_path / "img"
    image.write_bytes(b"o" * 8192)
    pieces = units_of(records, 0, 4096)
    assert wlog.apply_pieces(log, records, [pieces[1]], image) == 1
    assert image.read_bytes() == b"o" * 4096 + b"N" * 4096
    assert wlog.ranges(records, [pieces[1]]) == [(4096, 4096)]


def test_crash_moments_go_before_the_largest_burst_and_after_events():
    # small flushed writes; a checkpoint's burst A ending at a flush; more; a larger burst B ending at a flush
    kinds = [(W, 4096), (F, 0)] * 10 + [(W, 65536), (W, 65536), (F, 0)] + [(W, 4096), (F, 0)] * 5 + \
        [(W, 131072), (W, 131072), (F, 0)] + [(W, 4096), (F, 0)] * 10
    records = [rec(k, 10 + i, (1 << 30) + (i << 20), n) for i, (k, n) in enumerate(kinds)]  # new blocks only
    flush_a, flush_b = 22, 35
    events = [Event(29, "a checkpoint (1)"), Event(34, "a WAL segment switch (2)")]
    moments = crash_moments(records, 0, 10**6, 3, events=events)
    cuts = {c: why for c, _, why in moments}
    assert "burst" in cuts[flush_b] and "after a checkpoint (1)" in cuts[flush_a]
    assert exposed_flushes(records, 0, len(records))[:2] == [flush_b, flush_a]
    # a small burst that overwrites a page written long ago comes before a large one of new blocks, and
    # before a log page rewritten at each flush
    over = [rec(W, 1, 0, 8192), rec(F, 2), rec(W, 3, 1 << 20, 1 << 20), rec(F, 4), rec(W, 5, 1 << 30, 4096), rec(F, 6),
            rec(W, 7, 1 << 30, 4096), rec(F, 8), rec(W, 9, 0, 8192), rec(F, 10)]
    assert exposed_flushes(over, 2, len(over)) == [9, 3, 5, 7]
    assert when(2_500_000_000, 1_000_000_000, [Event(2_000_000_000, "a checkpoint (1)")]) == \
        "1.50 s into the run, 0.50 s after a checkpoint (1)"
    assert parse_events("100 a checkpoint (1)\n50 creating pg_wal/x\n7") == \
        [Event(50, "creating pg_wal/x"), Event(100, "a checkpoint (1)")]


def test_a_share_of_states_crash_again_during_recovery_and_the_recovery_cut_keeps_its_flushed_prefix():
    records = [rec(W, 100 + i, 4096 * i, 4096) for i in range(40)]
    states = generate(records, 99, 10**6, 8, recovery_share=0.25)
    assert [s.recovery for s in states] == [False, False, False, True] * 2
    recovery = [rec(W, 1, 0, 8192), rec(F, 2), rec(W, 3, 8192, 8192), rec(W, 4, 0, 4096)]
    for seed in range(30):
        cut, pieces, _ = recovery_crash(recovery, 4096, random.Random(seed))
        flushed = cut >= 2
        assert (Piece(0) in pieces) == flushed  # unflushed, the 8 KiB write lands only unit by unit
        assert all(p.record < cut for p in pieces)
        if flushed:
            assert pieces[:2] == (Piece(0), Piece(1))
    assert recovery_crash([], 4096, random.Random(1)) == (0, (), 0)


def test_the_cut_moment_runs_until_the_next_record():
    records = [rec(W, 10), rec(F, 20), rec(W, 50)]
    moments = [(c, m) for seed in range(1, 20) for c, m, _ in crash_moments(records, t_start=5, t_end=100, n=3,
                                                                              seed=seed)]
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


def test_file_events_name_creations_renames_and_removals():
    from pickfs.crash.files import changes

    before = {1: "pg_wal/000001", 2: "base/1/123", 3: "tmp"}
    after = {1: "pg_wal/000003", 2: "base/1/123", 4: "pg_wal/000002"}
    assert [e.what for e in changes(before, after, 7)] == \
        ["renaming pg_wal/000001 to pg_wal/000003", "creating pg_wal/000002", "removing tmp"]


def test_the_strategy_is_a_setting():
    from pickfs.crash.states import parse_strategies

    records = [rec(W, 100 + i, 8192 * i, 8192) if i % 3 else rec(F, 100 + i) for i in range(60)]
    chosen = ("torn writes", "random subset")
    states = generate(records, 99, 10**6, 10, strategies=chosen)
    assert {s.mode for s in states} <= set(chosen) and len(states) == 10
    assert parse_strategies("") == STRATEGIES == parse_strategies("all")
    assert parse_strategies("torn writes, random subset") == chosen
    with pytest.raises(ValueError, match="'torn'"):
        parse_strategies("torn")


def test_the_databases_write_backs_come_before_file_events():
    # one write-back event and many file events, each followed by its own overwriting burst
    records, t = [], 0
    for k in range(12):
        records += [rec(W, t + 1, 8192 * k, 8192), rec(F, t + 2)]
        t += 10
    for k in range(12):
        records += [rec(W, t + 1, 8192 * k, 8192), rec(F, t + 2)]
        t += 10
    events = [Event(125, f"creating f{k}", "file") for k in range(3)] + [Event(205, "a checkpoint (1)")] + \
        [Event(215 + k, f"renaming g{k}", "file") for k in range(3)]
    moments = crash_moments(records, 0, 10**6, 3, sorted(events, key=lambda e: e.t_ns))
    assert any("after a checkpoint (1)" in why for _, _, why in moments)


def test_a_programs_acknowledgements_are_stamped_as_they_arrive(tmp_path):
    from pickfs.crash.runner import acks_from, arrivals

    fifo, out = tmp_path / "acks.fifo", tmp_path / "acks.log"
    os.mkfifo(fifo)
    import time

    with acks_from(fifo, out):
        for n in range(3):  # a writer that opens, writes and closes per line: no end of file for the reader
            with open(fifo, "w") as w:
                w.write(f"item-{n}\n")
            time.sleep(0.05)
    lines = out.read_text().splitlines()
    assert [x.split(" ", 1)[1] for x in lines] == ["item-0", "item-1", "item-2"]
    stamps = arrivals(out)
    assert stamps == sorted(stamps) and len(set(stamps)) == 3
    from pickfs.crash.runner import owed_lines

    assert owed_lines(out.read_text(), stamps[1] + 1) == ["item-0", "item-1"]  # the third came after the cut
    assert owed_lines("5 a b\n7 c\nx y\n9", 8) == ["a b", "c"]


def test_the_lines_owed_to_a_check_are_handed_over_in_the_users_own_bytes(tmp_path):
    """The user's command may acknowledge lines that are not UTF-8: its check is handed them byte for byte."""
    from pickfs.crash.runner import write_owed

    stamped, owed = tmp_path / "acks.log", tmp_path / "owed"
    stamped.write_bytes(b"5 caf\xe9 \xff\n7 plain\n9 later\n")
    write_owed(stamped, owed, 8)
    assert owed.read_bytes() == b"caf\xe9 \xff\nplain\n"
    write_owed(tmp_path / "none", owed, 8)
    assert owed.read_bytes() == b""


def test_the_acknowledgements_counted_are_the_stamped_lines_whatever_their_bytes(tmp_path):
    """A fault cell of the user's command counts its acknowledgements as the check is handed them: stamped lines,
    in bytes the user chose (not UTF-8, or empty)."""
    from pickfs.crash.runner import arrivals

    log = tmp_path / "acks.log"
    assert arrivals(log) == []  # none arrived
    log.write_bytes(b"5 item-\xff\n7 \nnot stamped\n9 item-2\n")
    assert arrivals(log) == [5, 7, 9]


def test_the_workbench_builds_each_state_on_one_image_and_undoes_exactly_what_changed(tmp_path):
    from pickfs.crash.runner import Workbench
    from pickfs.crash.session import Recording

    size = 64 * 1024
    log = tmp_path / "run.log"
    with open(log, "wb") as fh:  # the run: a flushed write, then an unflushed 8 KiB write
        fh.write(wlog.encode(W, 10, 0, 4096) + b"A" * 4096 + wlog.encode(F, 11))
        fh.write(wlog.encode(W, 12, 8192, 8192) + b"B" * 8192)
    records = wlog.read_log(log)
    base, working, checks = tmp_path / "base.img", tmp_path / "working.img", tmp_path / "checks.log"
    for image in (base, working):
        with open(image, "wb") as fh:
            fh.truncate(size)
    checks.touch()
    bench = Workbench(log, records, base, 0, Recording(working, working, checks))
    state = generate(records, 0, 100, 1, strategies=("torn writes",))[0]
    assert state.durable == 2 and len(state.kept) == 1  # one 4 KiB unit of the 8 KiB write landed
    bench.prepare(state)
    data = working.read_bytes()
    assert data[:4096] == b"A" * 4096 and data[8192:16384].count(b"B") == 4096
    with open(checks, "ab") as fh:  # what a check (journal replay, recovery) wrote through the recorder
        fh.write(wlog.encode(W, 20, 32768, 100) + b"C" * 100 + wlog.encode(F, 21))
    wlog.apply(checks, wlog.read_log(checks), working)
    assert len(bench.checked()) == 2
    bench.reset()
    assert working.read_bytes() == base.read_bytes() and base.read_bytes()[:4096] == b"A" * 4096
    assert checks.stat().st_size == 0 and bench.dirty == []


def test_the_strategies_are_one_registry_of_objects_taken_in_their_turns():
    from pickfs.crash import states

    assert states.strategy_names() == STRATEGIES
    assert all(isinstance(s, states.Strategy) and s.text for s in states.REGISTRY.values())
    # the strategies that tear and reorder come first at the moments before a burst's flush
    assert states.turns(STRATEGIES, at_bursts=True) == ("torn writes", "random subset", "one write dropped",
                                                        "newest dropped")
    assert states.turns(STRATEGIES, at_bursts=False) == ("unflushed lost", "unflushed kept", "random subset",
                                                         "torn writes")
    assert {n for n, s in states.REGISTRY.items() if s.tears} == {"random subset", "torn writes"}
    with pytest.raises(ValueError, match="already registered"):
        states.register_strategy(states.REGISTRY["torn writes"])
    with pytest.raises(ValueError, match="unknown crash strategy"):
        choose([], 0, 0, "no such strategy", 4096, random.Random(1))
