"""`pickfs report` of a run another pickfs is still executing: it says so first, with how far the run is, gives no
answer (whose advice, run longer, would not apply to a run that has not ended), and a run that has measured
nothing yet is refused with exit 2, naming the latest run that ended."""

import math
import os
from pathlib import Path

import pytest

from pickfs.cli.main import main
from pickfs.engine.runlock import hold, release
from pickfs.store import ResultStore
from tests.records import fill, make_plan, record_dict
from tests.unit.test_race_report import raced_run


def report(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        main(["report", *argv])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    wd = tmp_path / "work"
    wd.mkdir(mode=0o700)
    return wd


@pytest.fixture
def results(workdir: Path) -> Path:
    """A finished run, then an undecided race (the advice to run longer in its answer)."""
    path = workdir / "results.db"
    store = ResultStore(path)
    fill(store, make_plan(), run_id="20260101-000000-done")
    raced_run(store, {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.04)}, "20260102-000000-race",
              blocks=2, rounds=3, slice_sd=0.3, image_sd=0.1)
    store.close()
    return path


def set_running(path: Path, run_id: str) -> None:
    store = ResultStore(path)
    store.set_status(run_id, "running")
    store.close()


def test_a_finished_race_advises_running_longer(capsys, workdir, results):
    # the control: the same run, ended, advises running longer (the advice the live report must not give)
    code, out, _ = report(capsys, "latest", "--workdir", str(workdir), "--results", str(results))
    assert code == 0 and "--max-time" in out and "still running" not in out


def test_a_live_run_says_it_is_still_running_and_gives_no_advice(capsys, workdir, results):
    set_running(results, "20260102-000000-race")
    fd = hold(workdir, "20260102-000000-race")
    try:
        code, out, _ = report(capsys, "latest", "--workdir", str(workdir), "--results", str(results))
        assert code == 0
        first = out.lstrip().splitlines()[0]
        assert first.startswith("still running (") and "slices so far); partial results" in first
        assert "--max-time" not in out and "run longer" not in out and "could not decide" not in out
        assert "ext4" in out  # the partial table is shown
        code, out, err = report(capsys, "latest", "--quiet", "--workdir", str(workdir), "--results", str(results))
        assert code == 0 and "still running (" in err
        assert out.strip() and all(line.endswith("(still running)") for line in out.strip().splitlines())
    finally:
        release(fd)
    # the lock released (the run ended or died): no longer reported as live
    code, out, _ = report(capsys, "latest", "--workdir", str(workdir), "--results", str(results))
    assert code == 0 and "still running (" not in out


def test_a_live_run_with_nothing_measured_is_refused_naming_the_last_run_that_ended(capsys, workdir, results):
    store = ResultStore(results)
    store.create_run("20260103-000000-live", "0.1.0", record_dict(make_plan()), {"hostname": "box"})
    store.close()
    fd = hold(workdir, "20260103-000000-live")
    try:
        for quiet in ((), ("--quiet",)):
            code, out, err = report(capsys, "latest", *quiet, "--workdir", str(workdir), "--results", str(results))
            assert code == 2 and not out
            assert len(err.strip().splitlines()) == 1
            assert "20260103-000000-live is still running and has measured nothing yet" in err
            assert "pickfs report 20260102-000000-race" in err
    finally:
        release(fd)
    assert os.path.exists(workdir / "locks" / "20260103-000000-live.lock")
