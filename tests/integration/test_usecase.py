"""run_plan called from code, as `pickfs search` and a fleet host call it: a real run on two existing
directories, interrupted from its own observer, then resumed to the end; nothing printed, nothing left."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from pickfs.engine.executor import Observer
from pickfs.engine.schedule import Slot
from pickfs.model import Method, Target, Trial, WorkloadSpec
from pickfs.plan import build_plan, directory_config
from pickfs.store import ResultStore
from pickfs.usecases.run import RunRequest, Silent, run_plan
from pickfs.workloads import workload_class
from tests.conftest import ledger_entries


class StopAfterFirstMeasured(Silent):
    """Ctrl-C as the user gives it, the moment the first measured run is saved."""

    @contextmanager
    def measuring(self) -> Iterator[Observer]:
        with super().measuring() as inner:
            def trial_saved(slot: Slot, trial: Trial) -> None:
                if trial.phase == "measured":
                    raise KeyboardInterrupt

            inner.trial_saved = trial_saved  # type: ignore[method-assign]
            yield inner


@pytest.fixture
def plan(workdir: Path):
    dirs = [workdir / "a", workdir / "b"]
    for d in dirs:
        d.mkdir()
    cls = workload_class("sqlite-tpcb")
    spec = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", tuple(sorted(cls.normalize({"duration": 0.5}).items())))
    return build_plan(Target(kind="directory", workdir=str(workdir)), [directory_config(str(d)) for d in dirs],
                      [spec], Method(runs=2, warmup=0, side_by_side=False, monitors=False, quiesce_seconds=0.0), None)


def test_a_run_from_code_is_interrupted_kept_and_resumed_to_the_end(workdir, plan, capsys):
    results = str(workdir / "results.db")
    stopped = StopAfterFirstMeasured()
    outcome = run_plan(RunRequest(plan=plan, workdir=str(workdir), results=results), stopped)
    assert outcome.status == "interrupted" and outcome.record is None and outcome.run_id
    run_id = outcome.run_id
    assert ("error", f"run {run_id} interrupted: 1 measured runs kept in {results}; continue with: "
            f"pickfs run --resume {run_id}") in stopped.said
    store = ResultStore(Path(results))
    assert store.load(run_id).status == "interrupted"
    store.close()
    assert ledger_entries(workdir) == []

    events = Silent()
    resumed = run_plan(RunRequest(resume=run_id, workdir=str(workdir), results=results), events)
    assert resumed.status == "complete" and resumed.run_id == run_id and resumed.record is not None
    assert resumed.error() is None and resumed.results == results
    measured = [t for t in resumed.record.trials if t.phase == "measured" and t.ok]
    assert sorted((t.cell_index, t.repetition) for t in measured) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert resumed.record.status == "complete"
    assert events.said[0][0] == "info" and events.said[0][1].startswith(f"run {run_id}: 2 configurations x 1")
    assert ledger_entries(workdir) == []
    out, err = capsys.readouterr()
    assert out == "" and err == ""  # the use case itself shows nothing


def test_a_run_in_which_nothing_gave_a_result_ends_failed_with_its_record(workdir, plan):
    cls = workload_class("command")
    failing = WorkloadSpec("command", "command", tuple(sorted(cls.normalize({"command": ["false"]}).items())))
    plan = replace(plan, workloads=(failing,))
    events = Silent()
    outcome = run_plan(RunRequest(plan=plan, workdir=str(workdir), results=str(workdir / "results.db")), events)
    assert outcome.status == "failed" and outcome.record is not None and outcome.record.status == "failed"
    error = outcome.error()
    assert error is not None and error.one_line().startswith(f"run {outcome.run_id} failed: no configuration gave")
    assert sum(1 for kind, _ in events.said if kind == "note") >= 2  # each configuration's error, as it came
    assert ledger_entries(workdir) == []
