"""A raced run as every format shows it: the preferred configuration and every contender's factor at the margin,
settled or not (then no configuration is recommended, and what would settle it is said); who left when; one
verdict per row."""

import io
import json
import math
import re
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


def render_text(record, explain: bool = False) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(render_run(record, explain=explain))
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
    assert "raced: 12 rounds" in text and "simultaneous" in text
    assert "measured side by side in a race" in render_text(record, explain=True)
    doc = json.loads(render_json(record))
    [answer] = doc["answers"]
    assert answer["decided"] is True and answer["answer"] == "ext4" and answer["margin"] == 0.05
    assert answer["preferred"] == "ext4" and answer["settled"] is True and answer["would_settle"] is None
    assert [(c["config"], c["standing"]) for c in answer["contenders"]] == [("xfs", "out")]
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
    said = "ext4, the distribution's default"
    assert said in text and "is preferred but not settled" in text and "xfs about" in text
    assert "at your 5% margin" in text and "--max-time" in text and "--margin" in text
    md = render_markdown(record)
    assert said in md and "at your 5% margin" in md
    doc = json.loads(render_json(record))
    [answer] = doc["answers"]
    assert answer["decided"] is False and answer["answer"] is None
    assert answer["preferred"] == "ext4" and answer["settled"] is False
    [xfs] = answer["contenders"]
    assert xfs["config"] == "xfs" and xfs["standing"] == "at" and xfs["ci_low"] < 1.05 < xfs["ci_high"]
    assert answer["would_settle"]["margin"] > 0.05
    assert answer["undecided_between"] == ["ext4", "xfs"]
    assert not any(c["recommended"] for c in doc["cells"])
    assert doc["tables"][0]["answer"]["decided"] is False


def test_a_settled_and_an_unsettled_run_of_the_same_truth_read_as_the_same_finding(tmp_path):
    """xfs truly 1.5% faster at a 5% margin: a long run settles (within the margin, what moves a level from run to
    run included), a short noisy one does not; both name ext4 first and give xfs's factor with its interval at
    the same margin, in every format."""
    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.015)}
    long = store.load(raced_run(store, effects, "long", rounds=12, slice_sd=0.02, image_sd=0.01, drift=0.05))
    short = store.load(raced_run(store, effects, "short", blocks=2, rounds=4, slice_sd=0.2, image_sd=0.05))
    said = {}
    for name, record in (("long", long), ("short", short)):
        text, md = render_text(record).replace("\n", " "), render_markdown(record)
        [answer] = json.loads(render_json(record))["answers"]
        sentence = answer["reason"]
        assert sentence.startswith("sqlite-tpcb: ") and "ext4, the distribution's default" in sentence
        assert sentence.split(".")[0].split(": ", 1)[1][:40].replace("use ", "") in md.replace("use ", "")
        assert "xfs" in text and "5% margin" in text
        [xfs] = answer["contenders"]
        said[name] = (answer["preferred"], answer["settled"], xfs["standing"], sentence)
    assert said["long"][:3] == ("ext4", True, "within")
    assert said["short"][:3] == ("ext4", False, "at")
    assert re.search(r"xfs \d\.\d\dx \[", said["long"][3]) and "within your 5% margin" in said["long"][3]
    assert "xfs about " in said["short"][3] and "at your 5% margin: " in said["short"][3]
    assert "would settle it" in said["short"][3] or "would." in said["short"][3]


def test_a_resolution_the_same_for_every_configuration_is_said_once():
    """A real run read 'resolution: under 10% cannot be told apart in this run (10%-10% by configuration)'."""
    from pickfs.report.race_method import by_configuration

    assert by_configuration(0.101, 0.099) == ""
    assert by_configuration(0.17, 0.20) == " (17%-20% by configuration)"
