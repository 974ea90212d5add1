"""A disturbed run does not decide on slices whose removal would change its answer: it is decided again on its
quiet slices, and where the answer differs it answers from those and says so first; a run that accepts a busy
machine (accept_busy, --accept-busy) decides on every slice and says which condition its answer is for."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from pickfs.analysis.run import analyse
from pickfs.model import RunRecord
from pickfs.report.json_export import render_json
from pickfs.report.markdown import render_markdown
from pickfs.store import ResultStore
from tests.unit.test_disturbance_report import loaded, terminal
from tests.unit.test_race_report import raced_run


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    """A race of ext4, ext4-nobarrier and xfs (truly 2% slower than ext4): ext4 is the answer on a quiet machine."""
    store = ResultStore(tmp_path_factory.mktemp("busy-answer") / "results.db")
    try:
        run = raced_run(store, {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(0.98)}, "busy",
                        rounds=12, slice_sd=0.02, image_sd=0.01, drift=0.05)
        return store.load(run)
    finally:
        store.close()


def busy_favours(record: RunRecord, busy_every: int, name: str, factor: float) -> RunRecord:
    """The run loaded every busy_every-th slice, in which configuration `name` measured `factor` times as fast
    (contention changing the ranking itself)."""
    run = analyse(record)
    view = run.views[0]
    primary = view.rows[0].primary.metric.name
    index = next(r.cell.index for r in view.rows if r.cell.config.name == name)
    out = loaded(record, busy_every)
    trials = []
    for t in out.trials:
        busy = t.monitor.get("totals", {}).get("other_cpu_s", 0) > 1
        if busy and t.cell_index == index and primary in t.metrics:
            t = replace(t, metrics={**t.metrics, primary: t.metrics[primary] * factor})
        trials.append(t)
    return replace(out, trials=tuple(trials))


def with_method(record: RunRecord, **keys: object) -> RunRecord:
    plan = dict(record.plan)
    plan["method"] = {**plan["method"], **keys}
    return replace(record, plan=plan)


def _contender(record: RunRecord) -> tuple[str, str]:
    view = analyse(record).views[0]
    assert view.race is not None and view.race.decision.answer == "ext4"
    return "ext4", "xfs"


def test_busy_slices_that_change_the_answer_are_left_out_and_said_first(record):
    preferred, other = _contender(record)
    busy = busy_favours(record, 2, other, 3.0)
    every_slice = analyse(with_method(busy, accept_busy=True)).views[0]
    assert every_slice.race is not None and every_slice.race.decision.answer != preferred  # the busy slices' answer
    run = analyse(busy)
    assert run.disturbance is not None and run.disturbance.disturbed and run.disturbance.rechecked
    assert run.disturbance.changes == (run.views[0].label,)
    assert run.views[0].race is not None and run.views[0].race.decision.answer == preferred  # the quiet slices'
    text = " ".join(terminal(run).split())
    assert text.index("busy for 50% of this run") < text.index("ext4, the distribution's default")  # said first
    assert f"Without the busy slices the answer for {run.views[0].label} differs" in text
    assert "it is decided on the 90 quiet slices alone, its time measured and what more time would settle it count " \
           "those alone" in text
    assert run.views[0].race.quiet  # its answer says so too (report/race_text.py: 'of quiet slices')
    md = render_markdown(run)
    assert md.index("Without the busy slices") < md.index("**Recommendation.**")
    doc = json.loads(render_json(run))
    assert doc["disturbance"]["decided_on_quiet_slices"] == [run.views[0].label]
    assert doc["disturbance"]["accepted"] is False


def test_busy_slices_that_do_not_change_the_answer_still_leave_its_figures_and_it_is_said(record):
    """The answer is the same without the busy slices, yet its figures are the quiet slices' alone: a busy slice's
    factor is the busy machine's, which a quiet rerun would contradict."""
    busy = loaded(record, busy_every=2)
    run = analyse(busy)
    label = run.views[0].label
    assert run.disturbance is not None and run.disturbance.rechecked and run.disturbance.changes == ()
    assert run.disturbance.on_quiet == (label,)
    text = " ".join(terminal(run).split())
    assert f"Without the busy slices the answer for {label} is the same; its figures count the" in text
    view, plain = run.views[0], analyse(record).views[0]
    every_slice = analyse(with_method(busy, accept_busy=True)).views[0]
    assert view.race is not None and plain.race is not None and every_slice.race is not None
    assert view.race.decision.answer == plain.race.decision.answer == every_slice.race.decision.answer
    assert view.race.quiet  # a settled answer names no minutes; an unsettled one says they are quiet slices'
    assert json.loads(render_json(run))["disturbance"]["figured_on_quiet_slices"] == [label]
    assert sum(len(r.observations) for r in view.rows) < sum(len(r.observations) for r in every_slice.rows)


def test_a_busy_machine_accepted_decides_on_every_slice_and_names_the_condition(record):
    _, other = _contender(record)
    busy = with_method(busy_favours(record, 2, other, 3.0), accept_busy=True)
    run = analyse(busy)
    assert run.disturbance is not None and run.disturbance.accepted and not run.disturbance.rechecked
    assert run.views[0].race is not None and run.views[0].race.decision.answer == other
    text = " ".join(terminal(run).split())
    assert "condition: a busy machine, which this run accepts as the condition to measure" in text
    assert "as the plan accepts" not in text  # --accept-busy sets it as well as the plan: the words fit both
    assert "The answer below is for a machine this busy" in text
    quiet = analyse(with_method(loaded(record, busy_every=0), accept_busy=True))
    assert "the answer below is for a quiet machine" in " ".join(terminal(quiet).split())
    assert json.loads(render_json(run))["disturbance"]["accepted"] is True


def test_the_flag_and_the_plan_key_set_it():
    from pickfs.plan.flags import method_overrides
    from pickfs.plan.method import method_from_table

    assert method_from_table({"accept_busy": True}).accept_busy
    assert not method_from_table({}).accept_busy
    base = {"target_ci": None, "max_time": None, "no_monitors": False}
    assert method_overrides({**base, "accept_busy": True})["accept_busy"] is True
    assert "accept_busy" not in method_overrides(base)


def test_a_run_busy_throughout_keeps_its_answer_and_says_it_is_the_busy_machines(record):
    """Every slice busy: nothing quiet to answer from; the answer stays (the busy machine's) and says so."""
    run = analyse(loaded(record, busy_every=1))
    view = run.views[0]
    assert view.race is not None and view.race.decision.answer == "ext4"
    assert run.disturbance is not None and run.disturbance.unchecked == (view.label,) and run.disturbance.changes == ()
    text = " ".join(terminal(run).split())
    assert f"Too few quiet slices to answer {view.label} without the busy ones: that answer is the busy machine's" in text
    doc = json.loads(render_json(run))
    assert doc["answers"] and doc["disturbance"]["too_few_quiet_slices"] == [view.label]


def test_an_unsettled_answer_on_quiet_slices_says_its_minutes_are_theirs(record):
    """The race's time and the projection of a view decided on the quiet slices count those alone: said so."""
    from pickfs.analysis.answer import finding
    from pickfs.report.race_text import decided_sentence

    view = analyse(record).views[0]
    assert view.race is not None
    short = replace(view, race=replace(view.race, decision=replace(view.race.decision, settled=False,
                                                                   undecided=("xfs",), decided=()), quiet=True))
    f = finding(short)
    assert f is not None and f.quiet and not f.settled
    sentence = decided_sentence(short)
    assert "is preferred but not settled in" in sentence and " of quiet slices;" in sentence, sentence


def two_workloads(record: RunRecord) -> RunRecord:
    """The run as if it had measured a second workload ('b', the same figures) after the first."""
    plan = dict(record.plan)
    [first] = plan["workloads"]
    plan["workloads"] = [first, {**first, "label": "b"}]
    cells = len(plan["configs"])
    return replace(record, plan=plan, trials=(*record.trials, *(replace(t, cell_index=t.cell_index + cells,
                                                                        started=t.started + 10_000)
                                                                for t in record.trials)))


def test_a_workload_none_of_whose_slices_was_busy_is_not_analysed_again(record, monkeypatch):
    """A disturbed run decides again on its quiet slices only the workloads with a busy slice: the others' views
    are as they are (each race fitted once, not twice)."""
    import pickfs.analysis.views as views

    both = two_workloads(record)
    label_b = "b"
    cells = len(both.plan["configs"])
    every = loaded(both, busy_every=2)  # the load only while the second workload ran:
    busy = replace(both, trials=tuple(b if b.cell_index >= cells else o
                                      for o, b in zip(both.trials, every.trials, strict=True)))
    fitted: list[str] = []
    race_of = views.race_of

    def counting(rows, base, method):
        if any(r.observations for r in rows):
            fitted.append(rows[0].cell.workload.label)
        return race_of(rows, base, method)

    monkeypatch.setattr(views, "race_of", counting)
    run = analyse(busy)
    assert run.disturbance is not None and run.disturbance.disturbed and run.disturbance.rechecked
    first = run.views[0].label
    assert fitted.count(first) == 1 and fitted.count(label_b) == 2, fitted
    assert first not in run.disturbance.changes and first not in run.disturbance.unchecked
