"""A raced run as every format shows it: the answer and its margin when the race decided, "could not
decide between" and no configuration named when it did not; who left when; one verdict per row."""

import io
import json
import math
from dataclasses import replace

from rich.console import Console

from pickfs.model import Method, Trial
from pickfs.report.json_export import render_json
from pickfs.report.markdown import render_markdown
from pickfs.report.terminal import render_run
from pickfs.store import ResultStore
from tests.records import make_plan, record_dict
from tests.unit.test_race import simulate

CELLS = {"ext4": 0, "ext4-nobarrier": 1, "xfs": 2}


def render_text(record) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(render_run(record))
    return console.export_text()


def raced_run(store: ResultStore, effects: dict[str, float], run_id: str, **kw) -> str:
    plan = make_plan("ext4")
    plan = replace(plan, configs=plan.configs[:3], method=Method(race=True, margin=0.05))
    store.create_run(run_id, "0.1.0", record_dict(plan), {"hostname": "box", "kernel": "6.1"})
    series = simulate(7, {"base" if n == "ext4" else n: e for n, e in effects.items()}, **kw)
    for name, obs in series.items():
        cell = CELLS["ext4" if name == "base" else name]
        for o in obs:
            store.save_trial(Trial(run_id=run_id, cell_index=cell, repetition=o.round or 0, phase="measured",
                                   started=o.t - 0.5, elapsed_s=1.0, ok=True,
                                   metrics={"tps": o.value, "slice_s": 1.0, "syncfs_s": 0.0, "lat_p99": 0.002},
                                   raw_output="", block=o.block, round=o.round))
    store.set_status(run_id, "complete")
    return run_id


def test_a_decided_race_names_its_answer_and_margin(tmp_path):
    store = ResultStore(tmp_path / "r.db")
    run = raced_run(store, {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(0.5)}, "r1",
                    rounds=12, slice_sd=0.02, image_sd=0.01, drift=0.05)
    record = store.load(run)
    text = render_text(record)
    assert "use ext4" in text and "5% margin" in text
    assert "measured side by side in a race" in text and "simultaneous" in text
    doc = json.loads(render_json(record))
    [answer] = doc["answers"]
    assert answer["decided"] is True and answer["answer"] == "ext4" and answer["margin"] == 0.05
    assert [c["config"] for c in doc["cells"] if c["recommended"]] == ["ext4"]
    for c in doc["cells"]:  # one verdict per row, agreeing with its interval
        comp = c["comparison"]
        if comp:
            assert comp["significant"] == (comp["ci_low"] > 1 or comp["ci_high"] < 1)


def test_an_undecided_race_says_so_and_names_nothing(tmp_path):
    store = ResultStore(tmp_path / "r.db")
    run = raced_run(store, {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.04)}, "r2",
                    blocks=2, rounds=3, slice_sd=0.3, image_sd=0.1)
    record = store.load(run)
    text = render_text(record)
    assert "could not decide between ext4 and xfs" in text
    assert "--max-time" in text and "--margin" in text
    md = render_markdown(record)
    assert "could not decide between ext4 and xfs" in md
    doc = json.loads(render_json(record))
    [answer] = doc["answers"]
    assert answer["decided"] is False and answer["answer"] is None
    assert answer["undecided_between"] == ["ext4", "xfs"]
    assert not any(c["recommended"] for c in doc["cells"])
    assert doc["tables"][0]["answer"]["decided"] is False
