"""The states a crash test saves as it checks them, read back on resume: each once, in the order checked."""

from pickfs.crash.runner import StateResult, state_from_json, state_json
from pickfs.engine.executor import kept_states
from pickfs.model import Phase, Trial


def _state(index: int, lost: int = 0) -> StateResult:
    return StateResult(index=index, mode="torn writes", cut=10 * index, dropped=1, mounted=True, fsck_ok=True,
                       db_opened=True, consistent=True, lost=lost, lost_seconds=0.5 * lost, acked_before=100,
                       problem="", seconds=0.6, torn=1, why="evenly")


def _trial(cell: int, state: StateResult, phase: Phase = "crash-state", ok: bool = True) -> Trial:
    return Trial(run_id="r", cell_index=cell, repetition=state.index, phase=phase,
                 started=1.0, elapsed_s=state.seconds, ok=ok, raw_output=state_json(state))


def test_a_saved_state_reads_back_as_it_was_checked():
    s = _state(3, lost=7)
    assert state_from_json(state_json(s)) == s
    assert state_from_json("not json") is None and state_from_json("[1, 2]") is None
    assert state_from_json('{"index": 1}') is None  # not a whole state


def test_kept_states_are_the_cells_own_each_once_in_order():
    previous = (_trial(0, _state(2)), _trial(0, _state(0, lost=3)), _trial(1, _state(1)), _trial(0, _state(0)),
                _trial(0, _state(1), phase="crash"), _trial(0, _state(4), ok=False),
                Trial(run_id="r", cell_index=0, repetition=9, phase="crash-state", started=1.0, elapsed_s=0.0, ok=True,
                      raw_output="{damaged"))
    kept = kept_states(previous, 0)
    assert [s.index for s in kept] == [0, 2]
    assert kept[0].lost == 3  # the first saved, not a later copy
