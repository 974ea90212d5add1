"""A disturbed run says so first, before the answer, in every format; a run that recorded a quiet
machine, or did not record it at all (every stored real run), says nothing."""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from pickfs.analysis.run import analyse
from pickfs.model import RunRecord
from pickfs.report.html import render_html
from pickfs.report.json_export import render_json
from pickfs.report.markdown import render_markdown
from pickfs.report.terminal import render_run
from pickfs.store import ResultStore

DATA = Path(__file__).resolve().parents[1] / "data"
RUN = "20261122-164741-a9ed"  # a race of the default job's kind, stored before the load was recorded


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    path = tmp_path_factory.mktemp("busy") / "results.db"
    path.write_bytes(gzip.decompress((DATA / "real-runs.db.gz").read_bytes()))
    store = ResultStore(path)
    try:
        return store.load(RUN)
    finally:
        store.close()


def loaded(record: RunRecord, busy_every: int) -> RunRecord:
    """The run as if every busy_every-th measured slice had other processes take 1.5 of 2 cores (0: none)."""
    trials = []
    n = 0
    for t in record.trials:
        if t.phase == "measured" and t.ok:
            busy = busy_every and n % busy_every == 0
            n += 1
            totals = {**t.monitor.get("totals", {}), "elapsed_s": 10.0, "cpus": 2, "cpu_steal_share": 0.001,
                      "psi_cpu_some_share": 0.8 if busy else 0.05, "other_cpu_s": 15.0 if busy else 0.1}
            t = replace(t, monitor={**t.monitor, "totals": totals,
                                    "other_cpu": [{"comm": "stress-ng", "cpu_s": 15.0 if busy else 0.1}]})
        trials.append(t)
    return replace(record, trials=tuple(trials))


def terminal(record: RunRecord) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=200, record=True, file=sink, color_system=None, force_terminal=False)
        console.print(render_run(record))
        return console.export_text()


def test_a_disturbed_run_says_so_first_in_every_format(record):
    run = analyse(loaded(record, busy_every=2))
    assert run.disturbance is not None and run.disturbance.disturbed
    answer = run.views[0]
    assert answer.measured
    line = "the machine was busy for 50% of this run"
    text = terminal(run)
    assert line in text and "other processes took 1.5 of 2 cores (stress-ng)" in text, text
    assert "some task waited for a CPU 80% of the time" in text
    lines = text.splitlines()
    busy_at = next(i for i, x in enumerate(lines) if line in x)
    assert busy_at <= 1  # right under the run's own line, before the answer and every table
    md = render_markdown(run)
    assert line in md and md.index(line) < md.index("**Recommendation.**")
    html = render_html(run, plotly=None)
    assert line in html and html.index(line) < html.index("The answer")
    doc = json.loads(render_json(run))
    d = doc["disturbance"]
    assert d["disturbed"] is True and d["busy_share"] == pytest.approx(0.5) and d["cpus"] == 2
    assert d["other_cores"] == pytest.approx(1.5) and d["others"] == ["stress-ng"]
    assert d["thresholds"]["others_share_of_cpus"] == 0.25


def test_a_quiet_run_that_recorded_it_says_nothing_but_its_json_has_the_figures(record):
    quiet = analyse(loaded(record, busy_every=0))
    assert quiet.disturbance is not None and not quiet.disturbance.disturbed
    assert "disturbed" not in terminal(quiet) and "disturbed" not in render_markdown(quiet)
    assert "disturbed" not in render_html(quiet, plotly=None)
    assert json.loads(render_json(quiet))["disturbance"]["disturbed"] is False


def test_not_recorded_says_nothing_and_has_no_json_key(record):
    plain = analyse(record)
    assert plain.disturbance is None
    assert "disturbance" not in json.loads(render_json(plain))
    assert "disturbed" not in terminal(plain) and "disturbed" not in render_markdown(plain)
