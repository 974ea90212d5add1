"""No report contradicts itself: every stored run in tests/data (the goldens' runs) and raced runs of known truth,
rendered in every format, where the answer, the table's verdicts and the JSON agree, and a comparison's interval
is the same in every view that shows it, or labelled with its family where a view must show another; one unit
(factors) throughout; the table shows the margin as a verdict of its own."""

from __future__ import annotations

import gzip
import html
import json
import math
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from pickfs.analysis.answer import ANSWER_FAMILY
from pickfs.analysis.views import RACE_FAMILY
from pickfs.report.html import PLOTLY_FILE, render_html
from pickfs.report.json_export import render_json
from pickfs.report.markdown import render_markdown
from pickfs.report.terminal import render_run
from pickfs.report.text import factor_interval
from pickfs.store import ResultStore
from tests.unit.test_race_report import raced_run

DATA = Path(__file__).resolve().parents[1] / "data" / "real-runs.db.gz"
PERCENT_INTERVAL = re.compile(r"\[[+-]?\d+% to [+-]?\d+%\]")  # an interval in percents: the one unit is factors
BRACKETED = re.compile(r"\[(\d[\d.,]*x) to (\d[\d.,]*x)[^\]]*\]")


def terminal(record, explain: bool = False) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=3000, record=True, file=sink, color_system=None)
        console.print(render_run(record, explain=explain))
        return console.export_text()


def views_of(record) -> dict[str, str]:
    return {"terminal": terminal(record), "explain": terminal(record, explain=True),
            "markdown": render_markdown(record).replace("\\", ""),
            "html": html.unescape(render_html(record, plotly=PLOTLY_FILE))}


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("one-interval")
    path = tmp / "results.db"
    path.write_bytes(gzip.decompress(DATA.read_bytes()))
    store = ResultStore(path)
    out = [store.load(r.id) for r in store.list_runs()]
    store.close()
    raced = ResultStore(tmp / "raced.db")
    within = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.03)}
    out.append(raced.load(raced_run(raced, within, "settled", rounds=12, slice_sd=0.02, image_sd=0.01, drift=0.05)))
    out.append(raced.load(raced_run(raced, within, "open", blocks=2, rounds=4, slice_sd=0.2, image_sd=0.05)))
    out.append(raced.load(raced_run(raced, {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(0.5)},
                                    "out", rounds=12, slice_sd=0.02, image_sd=0.01, drift=0.05)))
    raced.close()
    assert len(out) >= 8
    return out


def test_the_answer_the_table_and_the_json_agree(records):
    for record in records:
        doc = json.loads(render_json(record))
        answers = {a["workload"]: a for a in doc["answers"]}
        for table in doc["tables"]:
            a = answers[table["workload"]]
            starred = [r["configuration"] for r in table["rows"] if r["recommended"]]
            assert starred == ([a["answer"]] if a["answer"] else []), (record.id, table["workload"])
            assert table["answer"]["configuration"] == a["answer"]
            cells = [c["config"] for c in doc["cells"] if c["workload"] == table["workload"] and c["recommended"]]
            assert cells == starred
            for row in table["rows"]:
                verdict, f = row["cells"]["verdict"], row["figures"]
                if "significant" not in f:
                    continue
                if f["significant"]:
                    assert verdict.startswith("faster" if f["speed_vs_baseline"] > 1 else "slower"), (record.id, row)
                else:
                    assert verdict.startswith("not significant"), (record.id, row)
                if "contenders" in a:  # a race: the verdict exactly when the interval excludes 1
                    assert f["significant"] == (f["speed_ci_low"] > 1 or f["speed_ci_high"] < 1)
            if "contenders" in a and a["preferred"]:  # the margin's verdict in the table is the answer's standing
                margin = {r["configuration"]: r["cells"]["margin"] for r in table["rows"]}
                assert margin[a["preferred"]] == "preferred"
                for c in a["contenders"]:
                    assert margin[c["config"]] == {"within": "within", "at": "not settled", "out": "out"}[c["standing"]]


def test_one_comparison_one_interval_in_every_view_or_its_family_said(records):
    for record in records:
        doc = json.loads(render_json(record))
        shown = views_of(record)
        for name, text in shown.items():
            assert not PERCENT_INTERVAL.search(text), (record.id, name, PERCENT_INTERVAL.search(text))
        for table in doc["tables"]:
            a = next(x for x in doc["answers"] if x["workload"] == table["workload"])
            vs = {r["configuration"]: r["cells"]["vs_baseline"] for r in table["rows"]}
            for config, cell in vs.items():  # the table's interval, the same in every format
                if "[" in cell:
                    for name, text in shown.items():
                        assert cell in text, (record.id, name, config, cell)
            sentence = a["reason"]
            for m in re.finditer(r"(\S+) (?:would be|is not clearly faster \(|is not significantly faster \()"
                                 r"[^\[]*(\[[^\]]*\])", sentence):
                config, bracket = m.group(1), m.group(2)
                if table["baseline"] == a.get("preferred", a["answer"]) and config in vs:
                    assert vs[config].endswith(bracket), (record.id, sentence, vs[config])  # the table's own
                else:
                    assert "this pair alone" in bracket
            listed = [c for c in a.get("contenders", []) if c["standing"] in ("within", "at")]
            for c in listed:  # the answer's factors: as the JSON holds them, their family said
                said = factor_interval(c["factor"], c["ci_low"], c["ci_high"])
                assert said in sentence and ANSWER_FAMILY in sentence, (record.id, sentence)
                for name in ("terminal", "markdown", "html"):
                    assert said in shown[name] and ANSWER_FAMILY in shown[name], (record.id, name)
                if c["config"] in vs and vs[c["config"]] != said and table["baseline"] == a["preferred"]:
                    assert "simultaneous" in table["caption"]  # the table's family said too
        for line in shown["explain"].splitlines():  # the race log's figures: as the race saw them, said so
            if line.startswith("left the race") and ("at most" in line or "at least" in line or BRACKETED.search(line)):
                assert RACE_FAMILY in line, line


def test_a_bound_that_rounds_to_one_shows_its_side():
    assert factor_interval(1.02, 0.9997, 1.05) == "1.02x [0.999x to 1.05x]"
    assert factor_interval(1.02, 1.0001, 1.05) == "1.02x [1.001x to 1.05x]"
    assert factor_interval(1.0, 1.0, 1.0) == "1.00x [1.00x to 1.00x]"
