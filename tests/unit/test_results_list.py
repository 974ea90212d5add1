"""`pickfs results`: at 80 columns every run id whole (it is what a user copies), each run's answer beside it (the
one its report names), --json strict for scripts, and no plotly loaded to list runs."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pickfs.engine.runlock import hold, release
from pickfs.store import ResultStore
from tests.records import fill, make_plan

DATA = Path(__file__).resolve().parents[1] / "data"


def pickfs(*argv: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "TZ": "UTC"}
    return subprocess.run([sys.executable, "-m", "pickfs", "results", *argv], capture_output=True, text=True,
                          env=env, timeout=120)


def refuse(token: str) -> None:
    raise ValueError(f"not JSON: {token}")


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("results") / "results.db"
    path.write_bytes(gzip.decompress((DATA / "real-runs.db.gz").read_bytes()))
    return path


def quiet_answers(run_id: str) -> dict[str, str | None]:
    """The answers `pickfs report RUN --quiet` gives, from the golden renders."""
    lines = (DATA / "golden" / run_id / "quiet.txt").read_text().splitlines()
    pairs = [line.split(": ", 1) for line in lines]
    return {label: None if name == "none" else name for label, name in pairs}


def test_at_80_columns_every_id_is_whole_and_every_answer_shown(real, tmp_path):
    done = pickfs("--results", str(real), "--workdir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    store = ResultStore(real)
    ids = [r.id for r in store.list_runs()]
    store.close()
    assert len(ids) == 5
    for run_id in ids:
        [line] = [line for line in lines if line.startswith(run_id + " ")]  # whole, never "20261122…"
        for label, name in quiet_answers(run_id).items():
            assert f"{label}: {name or 'none'}" in done.stdout
        assert "…" not in line


def test_the_json_lists_every_run_with_the_answer_its_report_gives(real, tmp_path):
    done = pickfs("--results", str(real), "--workdir", str(tmp_path), "--json", "-")
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout, parse_constant=refuse)
    assert [set(r) for r in runs] == [{"id", "started", "status", "live", "configs", "workloads", "measured",
                                       "failures", "answer"}] * 5
    for r in runs:
        assert r["answer"] == quiet_answers(r["id"])
        assert r["status"] == "complete" and r["live"] is False and r["started"].endswith("Z")
        assert isinstance(r["measured"], int) and r["measured"] > 0 and isinstance(r["workloads"], list)
    out = tmp_path / "runs.json"
    written = pickfs("--results", str(real), "--workdir", str(tmp_path), "--json", str(out))
    assert written.returncode == 0 and not written.stdout
    assert json.loads(out.read_text(), parse_constant=refuse) == runs


def test_a_live_run_reads_still_running_and_no_answers_lists_without_them(tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir(mode=0o700)
    store = ResultStore(workdir / "results.db")
    fill(store, make_plan(), run_id="20260101-000000-done")
    fill(store, make_plan(), run_id="20260102-000000-live")
    store.set_status("20260102-000000-live", "running")
    store.close()
    fd = hold(workdir, "20260102-000000-live")
    try:
        text = pickfs("--workdir", str(workdir)).stdout
        [live] = [line for line in text.splitlines() if line.startswith("20260102-000000-live ")]
        assert live.rstrip().endswith("still running")
        [done] = [line for line in text.splitlines() if line.startswith("20260101-000000-done ")]
        assert done.rstrip().endswith("sqlite-tpcb: ext4")
        runs = {r["id"]: r for r in json.loads(pickfs("--workdir", str(workdir), "--json", "-").stdout)}
        assert runs["20260102-000000-live"]["live"] is True and runs["20260102-000000-live"]["answer"] is None
        assert runs["20260101-000000-done"]["answer"] == {"sqlite-tpcb": "ext4"}
        bare = pickfs("--workdir", str(workdir), "--no-answers").stdout
        assert "sqlite-tpcb: ext4" not in bare and "still running" in bare and "20260101-000000-done" in bare
    finally:
        release(fd)
    bare = pickfs("--workdir", str(workdir), "--no-answers").stdout  # nothing live, no answer: no such column
    assert "answer" not in bare and "still running" not in bare and "20260102-000000-live" in bare


def test_listing_runs_loads_no_plotly(real, tmp_path):
    code = ("import sys\nfrom pickfs.cli.main import main\n"
            f"try:\n    main(['results', '--results', {str(real)!r}, '--workdir', {str(tmp_path)!r}])\n"
            "except SystemExit:\n    pass\n"
            "print('plotly' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-1] == "False", done.stderr


def test_an_unsettled_race_reads_as_compare_says_it_and_the_json_names_nothing(tmp_path):
    """`pickfs results` said 'sqlite-tpcb: none' where `pickfs compare` of the same run said 'none (ext4 preferred,
    not settled)'."""
    import math

    from tests.unit.test_race_report import raced_run

    store = ResultStore(tmp_path / "r.db")
    raced_run(store, {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.04)}, "20260101-000000-r2ab",
              blocks=2, rounds=3, slice_sd=0.3, image_sd=0.1)
    store.close()
    done = pickfs("--results", str(tmp_path / "r.db"), columns=120)
    assert done.returncode == 0, done.stderr
    assert "sqlite-tpcb: none (ext4 preferred, not settled)" in done.stdout
    done = pickfs("--results", str(tmp_path / "r.db"), "--json", "-")
    assert json.loads(done.stdout)[0]["answer"] == {"sqlite-tpcb": None}
