"""A resumed capacity search continues from the rates already measured: interrupted mid-step on synthetic
servers, then resumed from its saved slices, it runs no rate twice over and ends where an uninterrupted one does."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from pickfs.engine.capacity import STEP_ROUNDS, Resumed, resume_state, saved_steps, search
from pickfs.model import Trial
from pickfs.stats.capacity import capacity
from tests.unit.test_capacity import TARGET, fake_slice
from tests.unit.test_fixed_rate import FakeServer


def members(names):
    return [SimpleNamespace(cell=SimpleNamespace(index=i, config=SimpleNamespace(name=n)), block=0)
            for i, n in enumerate(names)]


class Interrupted(Exception):
    pass


def stepper(servers, rates, saved, stop_after_slices=None):
    """A step runner over fake servers that saves every slice as it ends (as the engine saves trials), and is
    interrupted (as by Ctrl-C) once `stop_after_slices` slices are saved."""
    names = list(servers)

    def run_step(standing, failed, first_round):
        out = {}
        for r in range(first_round, first_round + STEP_ROUNDS):
            for m in standing:
                if stop_after_slices is not None and len(saved) >= stop_after_slices:
                    raise Interrupted
                s = fake_slice(servers[names[m.cell.index]], rates[m.cell.index], 2.0, 1000 * r + m.cell.index, r)
                saved.append((m.cell.index, s))
                out.setdefault(m.cell.index, []).append(s)
        return out

    return run_step


def as_trials(saved):
    return tuple(Trial(run_id="r", cell_index=i, repetition=0, phase="capacity", started=float(n), elapsed_s=2.0,
                       ok=True, raw_output=json.dumps({"fixed_rate": {
                           "offered": s.offered, "due": s.due, "late": s.late, "skipped": s.missed, "unfinished": 0,
                           "latency_us": {str(k): v for k, v in s.hist.items()}}}), block=0, round=s.round)
                 for n, (i, s) in enumerate(saved))


def servers():
    return {"fast": FakeServer(0.001), "slow": FakeServer(0.003)}


def interrupted(cut):
    """The search cut after `cut` slices, then resumed from what was saved: (whole, resumed verdicts, slices run
    before the cut, slices run after it, the whole search's slices, the resumed state)."""
    whole_saved: list = []
    rates = {0: 100.0, 1: 100.0}
    whole = search(members(servers()), set(), rates, TARGET, None, stepper(servers(), rates, whole_saved), print)
    saved: list = []
    rates = {0: 100.0, 1: 100.0}
    with pytest.raises(Interrupted):
        search(members(servers()), set(), rates, TARGET, None, stepper(servers(), rates, saved, cut), print)
    before = len(saved)
    cells = [SimpleNamespace(index=0), SimpleNamespace(index=1)]
    resumed = resume_state(saved_steps(cells, as_trials(saved)), TARGET, None, 1.0)  # type: ignore[arg-type]
    rates = {0: 100.0, 1: 100.0, **resumed.rates}
    again = search(members(servers()), set(), rates, TARGET, None, stepper(servers(), rates, saved), print,
                   resumed=resumed)
    return whole, again, before, len(saved) - before, len(whole_saved), resumed


def test_a_search_cut_mid_step_finishes_that_step_at_its_rate():
    cut = STEP_ROUNDS * 2 * 2 + 3  # two whole steps of both, then three slices of the third
    whole, again, before, after, _, resumed = interrupted(cut)
    assert before == cut and resumed.carried  # the cut step's slices are kept in its verdict
    for i in (0, 1):
        assert [v.rate for v in again[i][:3]] == [v.rate for v in whole[i][:3]]  # the same rates, not from 100/s
        assert again[i][2].rate == resumed.rates[i]
    assert after < sum(len(v) for v in again.values()) * STEP_ROUNDS * 2  # not run again from the start


@pytest.mark.parametrize("cut", [STEP_ROUNDS * 2 * 3])  # between steps
def test_an_interrupted_search_resumes_from_the_rates_already_measured(cut):
    whole_saved: list = []
    rates = {0: 100.0, 1: 100.0}
    whole = search(members(servers()), set(), rates, TARGET, None, stepper(servers(), rates, whole_saved), print)

    saved: list = []
    rates = {0: 100.0, 1: 100.0}
    with pytest.raises(Interrupted):
        search(members(servers()), set(), rates, TARGET, None, stepper(servers(), rates, saved, cut), print)
    first_part = len(saved)
    cells = [SimpleNamespace(index=0), SimpleNamespace(index=1)]
    resumed = resume_state(saved_steps(cells, as_trials(saved)), TARGET, None, 1.0)  # type: ignore[arg-type]
    assert resumed.next_round > 0 and resumed.verdicts  # it picks up where it was, not from the start
    rates = {0: 100.0, 1: 100.0, **resumed.rates}
    again = search(members(servers()), set(), rates, TARGET, None, stepper(servers(), rates, saved), print,
                   resumed=resumed)
    # the same rates tried in the same order, and the same capacity, as the search never interrupted
    for i in (0, 1):
        assert [v.rate for v in again[i]] == [v.rate for v in whole[i]]
        assert capacity(again[i]).rate == capacity(whole[i]).rate
    # nothing measured before the interruption was run again: as many slices in all as the whole search
    assert len(saved) == len(whole_saved) and first_part == cut


def test_a_search_that_was_over_runs_nothing_more():
    saved: list = []
    rates = {0: 100.0, 1: 100.0}
    search(members(servers()), set(), rates, TARGET, None, stepper(servers(), rates, saved), print)
    cells = [SimpleNamespace(index=0), SimpleNamespace(index=1)]
    resumed = resume_state(saved_steps(cells, as_trials(saved)), TARGET, None, 1.0)  # type: ignore[arg-type]
    assert resumed.over == {0, 1} and not resumed.searching_any(cells, set())  # type: ignore[arg-type]


def test_a_fresh_search_starts_from_nothing():
    assert Resumed().next_round == 0 and resume_state({}, TARGET, None, 1.0).verdicts == {}
