"""The report a reader wants: the default job's report at 80 columns in at most 45 lines with the answer in the
first 8 and no note cut; the race log, the space table and routine notes behind --explain (the HTML in the same
order: no race log between the chart and the table); under the answer the setup to apply, in every format; every
report says what each configuration is; 'why' lines name the device's role, never a loop device's number; a run
still being executed gives no answer in any format; the JSON's schema pickfs.run/2, with /1 read."""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from pickfs.analysis.run import analyse
from pickfs.report.html import PLOTLY_FILE, render_html
from pickfs.report.json_export import SCHEMA, render_json
from pickfs.report.json_read import NotARunExport, read_run
from pickfs.report.markdown import render_markdown
from pickfs.report.terminal import render_run
from pickfs.store import ResultStore
from tests.unit.test_race_report import raced_run

DATA = Path(__file__).resolve().parents[1] / "data" / "real-runs.db.gz"
DEFAULT_JOB = "20261122-172811-bf83"  # `pickfs run --max-time 2m`: sqlite-tpcb on every preset


def terminal(record, width: int = 80, explain: bool = False) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, file=sink, color_system=None)
        console.print(render_run(record, explain=explain))
        return console.export_text()


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("reader") / "results.db"
    path.write_bytes(gzip.decompress(DATA.read_bytes()))
    store = ResultStore(path)
    out = {r.id: store.load(r.id) for r in store.list_runs()}
    store.close()
    return out


@pytest.fixture(scope="module")
def raced(tmp_path_factory):
    store = ResultStore(tmp_path_factory.mktemp("raced") / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(0.5)}
    record = store.load(raced_run(store, effects, "r1", rounds=12, slice_sd=0.02, image_sd=0.01, drift=0.05))
    store.close()
    return record


def test_the_default_jobs_report_at_80_columns(stored):
    text = terminal(stored[DEFAULT_JOB])
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= 45, f"{len(lines)} lines:\n{text}"
    answer = next(i for i, line in enumerate(lines) if line.startswith("sqlite-tpcb: "))
    assert answer < 8
    assert "…" not in text  # no line cut
    assert "space used" not in text and "space used" in terminal(stored[DEFAULT_JOB], explain=True)
    # a note is never cut, at any width
    for width in (60, 80, 120):
        assert "…" not in terminal(stored[DEFAULT_JOB], width=width)


def test_a_races_log_is_one_line_by_default_and_whole_with_explain(raced):
    short, full = terminal(raced, width=200), terminal(raced, width=200, explain=True)
    assert "(more: --explain)" in short and "outlying image, kept" not in short
    assert "outlying image, kept" in full and "the baseline's" in full
    page = render_html(raced, plotly=PLOTLY_FILE)
    table, log = page.index("<th>configuration</th>"), page.index("outlying image, kept")
    chart = page.index('data-chart="forest"')
    assert chart < table < log  # the chart, the table, then (folded) the race log


def test_the_setup_under_the_answer_in_every_format(stored, raced):
    for record in (stored[DEFAULT_JOB], raced):
        doc = json.loads(render_json(record))
        [answer] = doc["answers"]
        name = answer["answer"]
        assert name is not None
        setup = answer["setup"]
        assert setup["mkfs"].startswith("mkfs.") and setup["mkfs"].endswith("/dev/DEVICE")
        assert setup["fstab"].startswith("/dev/DEVICE  /var/lib/DATABASE  ")
        assert setup["database_settings"].get("synchronous") is not None  # the database's settings as measured
        assert doc["tables"][0]["answer"]["setup"] == setup
        text = terminal(record, width=200)
        head = text[:text.index("configuration  ")]  # under the answer, before the table
        md, page = render_markdown(record), render_html(record, plotly=PLOTLY_FILE)
        for out in (head, md, page):
            assert setup["mkfs"] in out and setup["fstab"] in out
            assert f"the setup of {name}".lower() in out.lower()


def test_every_report_says_what_each_configuration_is(stored):
    record = stored[DEFAULT_JOB]
    doc = json.loads(render_json(record))
    what = {c["name"]: c["what"] for c in doc["configurations"]}
    assert what["ext4-nobarrier"] == "ext4, mkfs defaults, mount nobarrier"
    md, explain = render_markdown(record).replace("\\", ""), terminal(record, width=200, explain=True)
    for name, text in what.items():
        assert f"| {name} | {text} |" in md
        assert re.search(rf"{re.escape(name)} +{re.escape(text)}", explain)


def test_why_lines_name_the_devices_role_not_a_loop_number(stored):
    for record in stored.values():
        for out in (terminal(record, width=200), terminal(record, width=200, explain=True), render_markdown(record),
                    render_html(record, plotly=PLOTLY_FILE), render_json(record)):
            assert not re.search(r"\bloop\d+ wrote", out)
    assert "why ext4: its image's loop device wrote" in terminal(stored[DEFAULT_JOB], width=200)


def test_a_live_run_gives_no_answer_in_any_format(raced):
    live = replace(analyse(raced), live=True)
    doc = json.loads(render_json(live))
    assert doc["live"] is True and doc["answers"] == []
    assert not any(c["recommended"] for c in doc["cells"])
    assert all(t["answer"]["configuration"] is None and t["answer"]["setup"] is None for t in doc["tables"])
    md, page = render_markdown(live), render_html(live, plotly=PLOTLY_FILE)
    for out in (md, page):
        assert "still running (" in out and "use ext4" not in out and "Recommendation" not in out
    def starred(text: str) -> bool:  # ext4 marked recommended in a chart (plotly may escape the star)
        return "ext4 ★" in text or "ext4 \\u2605" in text

    assert 'class="rec"' not in page and not starred(page)  # no answer, in the charts neither
    assert starred(render_html(raced, plotly=PLOTLY_FILE))
    ended = json.loads(render_json(raced))  # the control: the same run ended gives its answer
    assert ended["live"] is False and ended["answers"][0]["answer"] == "ext4"
    assert "use ext4" in render_markdown(raced)


def test_the_json_is_schema_2_and_a_1_is_read(raced):
    doc = json.loads(render_json(raced))
    assert SCHEMA == doc["schema"] == "pickfs.run/2"
    assert doc["answers"][0]["interval"]["family"] == "margin"
    assert doc["tables"][0]["interval"]["family"] == "simultaneous"
    old = {k: v for k, v in doc.items() if k not in ("live", "configurations")}
    old["schema"] = "pickfs.run/1"
    old["answers"] = [{k: v for k, v in a.items() if k not in ("setup", "interval")} for a in doc["answers"]]
    old["tables"] = [{k: v for k, v in t.items() if k != "interval"} for t in doc["tables"]]
    read = read_run(old)
    assert read["schema"] == "pickfs.run/2" and read["answers"][0]["setup"] is None
    assert read["answers"][0]["answer"] == "ext4" and read["live"] is False
    assert [c["name"] for c in read["configurations"]] == [c["name"] for c in doc["configurations"]]
    assert read_run(doc) == doc
    with pytest.raises(NotARunExport, match="pickfs.run/1, pickfs.run/2"):
        read_run({"schema": "pickfs.search/1"})
