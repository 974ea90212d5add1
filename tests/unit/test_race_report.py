"""A raced run as every format shows it: the preferred configuration and every contender's factor at the margin,
settled or not (then no configuration is recommended, and what would settle it is said); who left when; one
verdict per row."""

import io
import json
import math
import re
from dataclasses import replace

from rich.console import Console

from pickfs.model import FsConfig, Method, Trial
from pickfs.report.json_export import render_json
from pickfs.report.markdown import render_markdown
from pickfs.report.terminal import render_run
from pickfs.store import ResultStore
from tests.records import make_plan, record_dict
from tests.unit.test_race import simulate

CELLS = {"ext4": 0, "ext4-nobarrier": 1, "xfs": 2, "jfs": 3}


def render_text(record, explain: bool = False) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(render_run(record, explain=explain))
    return console.export_text()


def raced_run(store: ResultStore, effects: dict[str, float], run_id: str, configs: int = 3, **kw) -> str:
    plan = make_plan("ext4")
    plan = replace(plan, configs=plan.configs[:configs], method=Method(race=True, margin=0.05))
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
    assert answer["contenders"][0]["close_to_margin"] is False
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
    assert "close to your 5% margin" in text and "--max-time" in text and "--margin" in text
    md = render_markdown(record)
    assert said in md and "close to your 5% margin" in md
    doc = json.loads(render_json(record))
    [answer] = doc["answers"]
    assert answer["decided"] is False and answer["answer"] is None
    assert answer["preferred"] == "ext4" and answer["settled"] is False
    [xfs] = answer["contenders"]
    assert xfs["config"] == "xfs" and xfs["standing"] == "at" and xfs["ci_low"] < 1.05 < xfs["ci_high"]
    assert xfs["close_to_margin"] is True  # open at the margin: always close to it
    assert answer["would_settle"]["margin"] > 0.05
    assert answer["undecided_between"] == ["ext4", "xfs"]
    assert not any(c["recommended"] for c in doc["cells"])
    assert doc["tables"][0]["answer"]["decided"] is False


FINDING = re.compile(r"xfs about \S+ \[[^\]]+\] as fast as ext4, close to your 5% margin")


def the_finding(sentence: str) -> str:
    """The sentence that matters, its figures masked: which configuration is faster than which by about how much,
    and that it is close to the margin."""
    m = FINDING.search(sentence)
    assert m is not None, sentence
    return re.sub(r"\d+(\.\d+)?x", "Nx", m.group(0))


def _answer(record) -> dict:
    [answer] = json.loads(render_json(record))["answers"]
    return answer


def test_a_settled_and_an_unsettled_run_of_the_same_truth_read_as_the_same_finding(tmp_path):
    """xfs truly 1.5% faster at a 5% margin: a long run settles (within the margin, what moves a level from run to
    run included), a short noisy one does not; both name ext4 first and say xfs's factor with its interval close to
    the same margin in the same words, in every format."""
    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.015)}
    long = store.load(raced_run(store, effects, "long", rounds=12, slice_sd=0.02, image_sd=0.01, drift=0.05))
    short = store.load(raced_run(store, effects, "short", blocks=2, rounds=4, slice_sd=0.2, image_sd=0.05))
    said = {}
    for name, record in (("long", long), ("short", short)):
        text, md = " ".join(render_text(record).split()), render_markdown(record)
        answer = _answer(record)
        sentence = answer["reason"]
        assert sentence.startswith("sqlite-tpcb: ") and "ext4, the distribution's default" in sentence
        assert sentence.split(".")[0].split(": ", 1)[1][:40].replace("use ", "") in md.replace("use ", "")
        md = " ".join(md.replace("\\[", "[").replace("\\]", "]").split())  # Markdown escapes its brackets
        assert the_finding(sentence) == the_finding(text) == the_finding(md)
        [xfs] = answer["contenders"]
        said[name] = (answer["preferred"], answer["settled"], xfs["standing"], xfs["close_to_margin"], sentence)
    assert said["long"][:4] == ("ext4", True, "within", True)
    assert said["short"][:4] == ("ext4", False, "at", True)
    assert the_finding(said["long"][4]) == the_finding(said["short"][4])
    assert "close to your 5% margin: within it in this run, though a rerun may leave it open" in said["long"][4]
    assert "would settle it" in said["short"][4] or "would." in said["short"][4]


def test_runs_that_settle_or_not_on_a_faster_configuration_prefer_it_alike(tmp_path):
    """xfs truly 1.09x ext4 at a 5% margin: a precise run rules ext4 out and says 'use xfs'; a short noisy one
    cannot rule ext4 out, and leans to xfs on its estimates (it prefers xfs unsettled, not ext4 as before). Both give
    xfs against ext4, faster one first, close to the margin in the same words; the settled one says a rerun may
    prefer ext4, the unsettled one that a wider margin would settle it in ext4's favour."""
    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.09)}
    settled = _answer(store.load(raced_run(store, effects, "xfs", rounds=14, slice_sd=0.02, image_sd=0.01,
                                           drift=0.05)))
    unsettled = _answer(store.load(raced_run(store, effects, "ext4", blocks=2, rounds=4, slice_sd=0.2,
                                             image_sd=0.05)))
    assert (settled["preferred"], settled["settled"]) == ("xfs", True)
    assert (unsettled["preferred"], unsettled["settled"]) == ("xfs", False)
    [ext4] = settled["contenders"]
    assert ext4["config"] == "ext4" and ext4["standing"] == "out" and ext4["close_to_margin"] is True
    [ext4] = unsettled["contenders"]
    assert (ext4["config"], ext4["standing"], ext4["close_to_margin"], ext4["more_preferred"]) == ("ext4", "at", True,
                                                                                                 True)
    assert the_finding(settled["reason"]) == the_finding(unsettled["reason"])
    assert ("close to your 5% margin: over it in this run, though a rerun may prefer ext4, the distribution's default"
            in settled["reason"])
    assert "use xfs (" in settled["reason"]  # no 'plainer choice': it is faster by more than the margin
    assert "sqlite-tpcb: xfs (" in unsettled["reason"] and ") is preferred but not settled" in unsettled["reason"]
    assert "in favour of ext4)" in unsettled["reason"]  # a wider margin settles it the other way


def test_the_answers_interval_never_contradicts_where_it_leaves_a_contender(tmp_path):
    """Three candidates: the bound that would overturn the order of preference is the decision's, its 5% shared over
    the three (Bonferroni). A run that leaves ext4 open against xfs printed xfs's lower end at one-sided 95% alone,
    over 1 + the margin, and still called it 'close to your 5% margin', not settled; now the interval printed is the
    one the decision tests, and its words say so."""
    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.16), "jfs": 0.0}
    answer = _answer(store.load(raced_run(store, effects, "three", configs=4, blocks=2, rounds=5, slice_sd=0.05,
                                          image_sd=0.03)))
    assert (answer["preferred"], answer["settled"]) == ("xfs", False)
    ext4 = next(c for c in answer["contenders"] if c["config"] == "ext4")
    assert ext4["standing"] == "at"
    assert 1 / ext4["ci_high"] <= 1.05  # xfs's lower end against ext4 does not clear the margin: not settled
    assert "shared over 3 candidates" in answer["reason"] and "shared over 3 candidates" in answer["interval"]["text"]
    said = re.search(r"xfs about ([\d.]+)x \[([\d.]+)x to ([\d.]+)x\] as fast as ext4", answer["reason"])
    assert said is not None and float(said.group(2)) <= 1.05


def test_a_less_preferred_configuration_that_is_out_is_never_close(tmp_path):
    """xfs truly 0.92x ext4: out, near the margin's edge; a rerun that kept it in would still prefer ext4, so the
    answer does not call it close (nothing a rerun could say otherwise)."""
    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(0.92)}
    answer = _answer(store.load(raced_run(store, effects, "slow", rounds=14, slice_sd=0.02, image_sd=0.01,
                                          drift=0.05)))
    assert (answer["preferred"], answer["settled"]) == ("ext4", True)
    [xfs] = answer["contenders"]
    assert xfs["standing"] == "out" and xfs["close_to_margin"] is False
    assert "xfs is out, slower by more than the 5% margin" in answer["reason"]
    assert "close to" not in answer["reason"]


def test_a_resolution_the_same_for_every_configuration_is_said_once():
    """A real run read 'resolution: under 10% cannot be told apart in this run (10%-10% by configuration)'."""
    from pickfs.report.race_method import by_configuration

    assert by_configuration(0.101, 0.099) == ""
    assert by_configuration(0.17, 0.20) == " (17%-20% by configuration)"


def copied_run(store: ResultStore, effects: dict[str, float], run_id: str, **kw) -> str:
    """A raced run of ext4, ext4-nobarrier, xfs and `ext4-aa`: ext4 again under another name (an A/A copy)."""
    plan = make_plan("ext4")
    configs = (*plan.configs[:3], FsConfig("ext4-aa", "ext4", description="ext4 again"))
    plan = replace(plan, configs=configs, method=Method(race=True, margin=0.05))
    store.create_run(run_id, "0.1.0", record_dict(plan), {"hostname": "box", "kernel": "6.1"})
    cells = {**CELLS, "ext4-aa": 3}
    series = simulate(7, {"base" if n == "ext4" else n: e for n, e in effects.items()}, base_copies=2, **kw)
    for name, obs in series.items():
        for o in obs:
            store.save_trial(Trial(run_id=run_id, cell_index=cells["ext4" if name == "base" else name],
                                   repetition=o.round or 0, phase="measured", started=o.t - 0.5, elapsed_s=1.0,
                                   ok=True, metrics={"tps": o.value, "slice_s": 1.0, "syncfs_s": 0.0,
                                                     "lat_p99": 0.002},
                                   raw_output="", block=o.block, round=o.round))
    store.set_status(run_id, "complete")
    return run_id


def test_an_aa_copy_is_a_check_never_a_contender_of_its_own(tmp_path):
    """Two copies of one setup got two calls in one run (one copy of ext4 close to the margin, the other out): the
    copy is the method's check, beside the finding; the setup's call is its original's alone."""
    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.09), "ext4-aa": 0.0}
    record = store.load(copied_run(store, effects, "aa", rounds=10, slice_sd=0.03, image_sd=0.02, drift=0.05))
    answer = _answer(record)
    assert answer["preferred"] in ("ext4", "xfs")
    assert "ext4-aa" not in [c["config"] for c in answer["contenders"]]
    assert "ext4-aa" not in answer["undecided_between"]
    [check] = answer["checks"]
    assert check["config"] == "ext4-aa" and check["copy_of"] == "ext4" and check["different"] is False
    cell = next(c for c in json.loads(render_json(record))["cells"] if c["config"] == "ext4-aa")
    assert (check["ci_low"], check["ci_high"]) == (cell["comparison"]["ci_low"], cell["comparison"]["ci_high"])
    text = " ".join(render_text(record).split())
    assert "ext4-aa, ext4 measured again as a check of the method:" in text and "as a copy should be" in text
    assert re.search(r"ext4-aa\s.*\bcheck\b", render_text(record))  # the table's margin column


def test_a_copy_called_different_is_said_as_the_runs_own_difference(tmp_path):
    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.09), "ext4-aa": math.log(0.8)}
    answer = _answer(store.load(copied_run(store, effects, "odd", rounds=10, slice_sd=0.03, image_sd=0.02,
                                           drift=0.05)))
    [check] = answer["checks"]
    assert check["different"] is True
    assert "the two copies of one setup differ by about" in answer["reason"]
    assert "the answer counts ext4 alone" in answer["reason"]
    assert "ext4-aa" not in [c["config"] for c in answer["contenders"]]


def test_the_stop_note_and_the_answer_prefer_one_configuration_and_give_one_figure(tmp_path):
    """A run leaning to xfs unsettled: the race's stop note (`would_settle`) and the answer (`finding`) name the same
    preferred configuration, the same open contender and the same time, on the same slices."""
    from pickfs.analysis.answer import finding
    from pickfs.analysis.margin import would_settle
    from pickfs.analysis.run import analyse
    from pickfs.analysis.views import final_roles

    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.09)}
    [view] = analyse(store.load(raced_run(store, effects, "lean", blocks=2, rounds=4, slice_sd=0.2,
                                          image_sd=0.05))).views
    assert view.race is not None and not view.race.decision.settled
    found = finding(view)
    said = would_settle(view.race.fit, view.race.decision, view.race.minutes * 60, final_roles(view).candidates)
    assert found is not None and (found.preferred, said.preferred) == ("xfs", "xfs")
    assert said.contenders == ("ext4",) and said.widened_for == "ext4"
    assert (found.more_s, found.wider) == (said.more_s, said.wider)


def test_a_default_put_out_by_a_third_configuration_says_which(tmp_path):
    """ext4 1.00, xfs 1.08, jfs 1.12 at a 5% margin: jfs puts ext4 out, xfs is within the margin of jfs and plainer.
    The answer said 'xfs about 1.06x [1.04x to 1.09x] as fast as ext4 ...: over it in this run', a lower end under
    the margin said to be over it; now it says jfs put ext4 out, with jfs's own factor."""
    store = ResultStore(tmp_path / "r.db")
    effects = {"ext4": 0.0, "ext4-nobarrier": math.log(1.8), "xfs": math.log(1.08), "jfs": math.log(1.12)}
    answer = _answer(store.load(raced_run(store, effects, "third", configs=4, rounds=8, slice_sd=0.02, image_sd=0.01,
                                          drift=0.05)))
    assert answer["preferred"] == "xfs"
    ext4 = next(c for c in answer["contenders"] if c["config"] == "ext4")
    assert ext4["standing"] == "out" and ext4["rival"]["config"] == "jfs" and ext4["rival"]["ci_low"] > 1.05
    assert "ext4 out in this run (jfs about 1.1" in answer["reason"]
    assert "over it in this run" not in answer["reason"]
