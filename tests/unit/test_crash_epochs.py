"""Targeted states cover the recording's flush epochs systematically: in a stated priority order, batch after batch,
never one already covered while others are not, overwriting multi-unit writes torn first."""

import math

from pickfs.crash import log as wlog
from pickfs.crash.states import (
    AT_RANDOM,
    FIRST_DRAWN,
    LATER_DRAWN,
    Done,
    Event,
    coverage,
    covered,
    epochs,
    generate,
    window,
)
from pickfs.stats.crashbound import bound

W, F = wlog.WRITE, wlog.FLUSH
UNIT = 4096
DATA = 1 << 20  # the data pages' offset; the log's pages are below it


def rec(kind, t, offset=0, length=0):
    return wlog.Record(kind, t, offset, length, 0)


def recording(n_epochs=60):
    """A database's recording: its data pages written before the run; in the run, each epoch appends a log page
    and flushes; every fifth epoch is a checkpoint writing back 2 to 4 data pages in one multi-unit write (the
    pages a torn write can break), every seventh a new multi-unit write over pages never written before."""
    out = [rec(W, 1, DATA, 64 * UNIT), rec(F, 2)]
    t = 10
    for k in range(n_epochs):
        out.append(rec(W, t, k * UNIT, UNIT))
        t += 1
        if k % 5 == 0:
            out.append(rec(W, t, DATA + (k % 16) * UNIT, (2 + k % 3) * UNIT))
            t += 1
        if k % 7 == 0:
            out.append(rec(W, t, 2 * DATA + k * 8 * UNIT, 2 * UNIT))
            t += 1
        out.append(rec(F, t))
        t += 1
    return out, 5, t + 5


def test_epochs_come_in_the_stated_priority_order():
    records, t_start, t_end = recording()
    first, last = window(records, t_start, t_end)
    order = epochs(records, first, last, UNIT)
    assert len(order) == 60 and len({e.start for e in order}) == 60
    assert [e.priority for e in order] == sorted(e.priority for e in order)
    # the checkpoints' write-backs overwriting data pages written before the previous flush come first, the
    # largest first; then the first checkpoint's (its pages were written in the epoch just before: not exposed,
    # but an overwriting multi-unit write); then the epochs with a new multi-unit write (more bytes); then the
    # log's, in run order
    checkpoints = [e for e in order if e.exposed]
    assert len(checkpoints) == 11 and order[:11] == checkpoints
    assert [e.exposed for e in checkpoints] == sorted((e.exposed for e in checkpoints), reverse=True)
    assert all(len(e.overwrites) == 1 for e in checkpoints)
    assert order[11].start == first and order[11].overwrites and not order[11].exposed
    rest = order[12:]
    assert [e.size for e in rest] == sorted((e.size for e in rest), reverse=True)
    plain = [e.start for e in rest if e.size == UNIT]
    assert plain == sorted(plain)
    for e in order:  # each is cut just before its own flush
        assert records[e.cut].kind == F and all(records[i].kind != F for i in range(e.start, e.cut))


def batches(records, t_start, t_end, sizes, events=()):
    """States in batches as a crash test on a budget makes them: each knowing what the earlier ones covered, the
    first a third at random, the later ones LATER_DRAWN."""
    first, last = window(records, t_start, t_end)
    tried, out = [], []
    for k, n in enumerate(sizes):
        done = covered(records, first, last, tried, UNIT)
        states = generate(records, t_start, t_end, n, seed=1 + k, unit=UNIT, events=events, done=done,
                          drawn=FIRST_DRAWN if k == 0 else LATER_DRAWN)
        out.append((done, states))
        tried += states
    return out, coverage(records, first, last, tried, UNIT)


def test_each_batch_takes_the_next_epochs_not_yet_covered_and_never_repeats_one():
    records, t_start, t_end = recording()
    first, last = window(records, t_start, t_end)
    order = [e.start for e in epochs(records, first, last, UNIT)]
    events = [Event(t, f"checkpoint {t}") for t in range(20, 300, 40)]
    runs, _ = batches(records, t_start, t_end, [12, 12, 12], events)
    seen: set[int] = set()
    for done, states in runs:
        assert done.epochs == seen  # what the earlier batches covered is known
        targeted = [s.durable for s in states if not s.drawn]
        assert targeted and len(targeted) == len(set(targeted))  # within a batch, each epoch once
        assert not set(targeted) & done.epochs  # none already covered: uncovered ones remain
        # the burst states are the next epochs of the order that were not covered yet
        fresh = [e for e in order if e not in done.epochs]
        bursts = [s.durable for s in states if s.why.startswith("before the flush ending")]
        near = {s.durable for s in states if s.why.startswith("before the most exposed flush after")}
        fresh = [e for e in fresh if e not in near]  # an epoch a state after an event took is not taken twice
        assert bursts and sorted(bursts, key=order.index) == fresh[:len(bursts)]
        seen |= {s.durable for s in states if s.units}  # a cut with no unflushed write covers none


def test_overwriting_multi_unit_writes_are_torn_first():
    records, t_start, t_end = recording()
    (_, states), = batches(records, t_start, t_end, [12])[0]
    first, last = window(records, t_start, t_end)
    over = {e.start: e.overwrites for e in epochs(records, first, last, UNIT)}
    targeted = [s for s in states if not s.drawn and over.get(s.durable)]
    assert targeted and all(s.mode == "torn writes" and s.torn for s in targeted)
    for s in targeted:  # the overwriting write lands in part: some of its units, not all
        for i in over[s.durable]:
            landed = sum(1 for p in s.kept if p.record == i)
            assert 0 < landed < records[i].length // UNIT


def test_coverage_rises_with_the_budget_to_all_of_the_recording():
    records, t_start, t_end = recording()
    small = batches(records, t_start, t_end, [12])[1]
    more = batches(records, t_start, t_end, [12, 24])[1]
    # the later batches aim a fifth of their states down the priority order (the rest are the bound's sample), so
    # covering every epoch takes a budget whose targeted states alone number the epochs
    enough = batches(records, t_start, t_end, [12, 60, 120, 120])[1]
    assert small.epochs == more.epochs == enough.epochs == 60
    assert small.epochs_covered < more.epochs_covered < enough.epochs_covered == 60
    assert small.overwrites == enough.overwrites == 12  # the checkpoints' (the new multi-unit writes overwrite nothing)
    assert small.overwrites_torn <= more.overwrites_torn <= enough.overwrites_torn == 12


def test_once_every_epoch_is_covered_a_batch_goes_round_again():
    records, t_start, t_end = recording(6)
    first, last = window(records, t_start, t_end)
    every = frozenset(e.start for e in epochs(records, first, last, UNIT))
    states = generate(records, t_start, t_end, 6, unit=UNIT, done=Done(every, frozenset()))
    bursts = [s.durable for s in states if s.why.startswith("before the flush ending")]
    assert bursts and set(bursts) <= every
    assert sum(1 for s in states if s.why == AT_RANDOM) == 2  # the random sample is untouched by coverage


def test_a_later_batch_draws_four_in_five_at_random_and_aims_the_rest_at_the_next_epochs():
    records, t_start, t_end = recording()
    first, last = window(records, t_start, t_end)
    order = [e.start for e in epochs(records, first, last, UNIT)]
    (_, one), (done, later) = batches(records, t_start, t_end, [12, 40])[0]
    assert sum(s.drawn for s in one) == 4  # the first states: a third at random
    assert sum(s.drawn for s in later) == math.ceil(40 * LATER_DRAWN) == 32
    assert all(s.why == AT_RANDOM for s in later if s.drawn)
    aimed = [s.durable for s in later if not s.drawn]
    assert len(aimed) == 8 and not set(aimed) & done.epochs  # the next epochs, none covered before
    fresh = [e for e in order if e not in done.epochs]
    assert sorted(aimed, key=order.index) == fresh[:8]  # in the priority order: the write-backs first


def test_a_budgets_states_rule_out_1_in_150_within_600():
    """The states a clean cell checks in its budget are mostly the sample: 600 states, 12 first and the rest in
    later batches, hold at least 448 drawn at random, which rule out a loss in 1 state of 150 or more."""
    records, t_start, t_end = recording(600)
    runs, cover = batches(records, t_start, t_end, [12, 100, 200, 288])
    drawn = sum(s.drawn for _, states in runs for s in states)
    assert drawn >= 448 and bound(0, drawn).rules_out_one_in >= 150
    assert cover.epochs_covered > 200  # and the rest covered the head of the priority order
