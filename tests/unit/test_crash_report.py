"""The crash section of a report: the model in force, what no simulation shows, settings the model could
not exercise (issue 19 point 10), and when each losing state was cut."""

import json
from dataclasses import asdict

from pickfs.analysis.run import build_views
from pickfs.crash.runner import UNSEEN, CrashResult, StateResult, model_text
from pickfs.model import Plan, Target, Trial, WorkloadSpec, method_of, plan_to_dict
from pickfs.report.crash_text import crash_details
from pickfs.report.html import render_html
from pickfs.report.markdown import render_markdown
from pickfs.risks import crash_model_gaps
from pickfs.stack.presets import PRESETS
from pickfs.workloads import workload_class

RUN = "20260101-000000-cccc"


def spec(name, label, **settings):
    return WorkloadSpec(name, label, tuple(sorted(workload_class(name).normalize(settings).items())))


def state(i, lost=0, torn=0, when="", mode="random subset"):
    return StateResult(i, mode, 100 + i, 3, True, True, True, True, lost, 0.5 if lost else 0.0, 40, seconds=1.0,
                       units=8, torn=torn, when=when, why="evenly over the run")


def saved(store, workloads, docs):
    plan = Plan(Target(), (PRESETS["ext4"],), tuple(workloads), method_of(runs=1, warmup=0, speed=False, crash_states=2))
    d = plan_to_dict(plan)
    for w in d["workloads"]:
        w["metrics"] = [asdict(m) for m in workload_class(w["name"]).metrics]
    store.create_run(RUN, "0.1.0", d, {"hostname": "box", "kernel": "6.1"})
    for cell, doc in enumerate(docs):
        metrics = doc.pop("_metrics")
        store.save_trial(Trial(run_id=RUN, cell_index=cell, repetition=0, phase="crash", started=1.0, elapsed_s=10.0, ok=True, metrics=metrics, raw_output=json.dumps(doc)))
    store.set_status(RUN, "complete")
    return store.load(RUN)


def test_a_clean_verdict_on_a_torn_page_setting_is_refused_when_the_model_cannot_tear(store):
    old = {"backend": "postgresql", "states": [asdict(state(0)), asdict(state(1))],
           "model": "worst-case disk: whole requests", "_metrics": {"crash_states": 2.0}}  # stored before units
    torn = CrashResult("postgresql", 50, 10, 5, (state(0, torn=1), state(1, lost=3, torn=2,
                                                 when="1.50 s into the run, 0.02 s after a checkpoint (3)")), 1.0,
                       model_text(4096, 0.25), UNSEEN, 4096, 0.25, 4.0, 0.5)
    new = {**json.loads(torn.as_json()), "_metrics": torn.metrics()}
    record = saved(store, [spec("pgbench", "fpw-off-old", full_page_writes="off"),
                           spec("pgbench", "fpw-off", full_page_writes="off")], [old])
    [view_old, _] = build_views(record)
    crash = view_old.rows[0].crash
    assert crash.gaps and "cannot tear a page" in crash.gaps[0]
    assert not crash.lost_any and "could not exercise full_page_writes" in crash.verdict()
    assert "none lost in 2 states" in crash.verdict() and "no verdict" in crash.verdict()
    md = render_markdown(record)
    assert "⚠ full\\_page\\_writes=off: its risk is a torn 8 KiB page" in md and "no verdict on it" in md

    store2 = type(store)(store.path.parent / "two.db")
    record = saved(store2, [spec("pgbench", "fpw-off", full_page_writes="off")], [new])
    [view] = build_views(record)
    assert view.rows[0].crash.gaps == ()  # 4 KiB units tear an 8 KiB page, and states tore writes
    lines = crash_details(view)
    assert any("state 2 (random subset, 2 writes torn" in x and "cut 1.50 s into the run, 0.02 s after a checkpoint"
               in x for x in lines), lines
    assert any("states/s" in x for x in lines)
    md = render_markdown(record)
    assert "4 KiB units" in md and "acknowledges a flush it has not done" in md
    page = render_html(record, plotly=None)  # the HTML says the same: model, what none shows, when states were cut
    assert "4 KiB units" in page and "acknowledges a flush it has not done" in page
    assert "cut 1.50 s into the run, 0.02 s after a checkpoint" in page


def test_settings_the_model_cannot_exercise():
    innodb = spec("sysbench-oltp", "x", innodb_doublewrite="OFF")
    assert crash_model_gaps(innodb, 4096, 3) == []
    assert "unit is 16 KiB" in crash_model_gaps(innodb, 16384, 3)[0]
    assert "no state of this run tore a write" in crash_model_gaps(innodb, 4096, 0)[0]
    assert crash_model_gaps(spec("pgbench", "d"), None, None) == []  # the default protects against torn pages
    assert crash_model_gaps(spec("sqlite-tpcb", "s", synchronous="NORMAL"), None, None) == []


def test_crashtest_refuses_bad_settings_in_one_line(tmp_path, capsys):
    import pytest

    from pickfs.cli.main import main

    for args, said in ((["--unit", "3000"], "--unit 3000 is not a power of two"),
                       (["--strategies", "torn"], "unknown crash strategy 'torn'"),
                       (["--recovery-crashes", "2"], "--recovery-crashes must be a share"),
                       (["--workload", "command", "--set", "command='true'"], "needs your check of each state")):
        with pytest.raises(SystemExit) as exc:
            main(["crashtest", "--fs", "ext4", "--workdir", str(tmp_path / "wd"), "--results", str(tmp_path / "r.db"), *args])
        err = capsys.readouterr().err
        assert exc.value.code == 2, (args, err)
        assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    plan = tmp_path / "plan.toml"
    plan.write_text('[method]\ncrash_strategies = "torn"\n[[config]]\npreset = "ext4"\n[[workload]]\nname = "sqlite-tpcb"\n')
    with pytest.raises(SystemExit) as exc:
        main(["crashtest", "--plan", str(plan), "--workdir", str(tmp_path / "wd"), "--results", str(tmp_path / "r.db")])
    assert exc.value.code == 2 and "crash_strategies: unknown crash strategy 'torn'" in capsys.readouterr().err


def crash_plan_of(*args: str):
    from pickfs.cli.crashtest import command, crash_plan

    return crash_plan(command.make_context("crashtest", list(args)).params)


def test_a_crash_image_is_sized_to_the_job_when_no_size_is_given(tmp_path):
    """`pickfs crashtest --workload pgbench` with no --size: the image grows to hold pgbench's data (as
    `run` sizes its images), within the recorder's limits; a given size too small says what to do."""
    import pytest

    from pickfs.errors import PlanError
    from pickfs.plan import CRASH_IMAGE_MAX, CRASH_IMAGE_MIN, build_plan, configs_from_names
    from pickfs.workloads import workload_class

    common = ("--fs", "ext4", "--workload", "pgbench", "--states", "40", "--duration", "10s",
              "--workdir", str(tmp_path))
    plan = crash_plan_of(*common, "--set", "full_page_writes=off")
    need = workload_class("pgbench").space_needed(plan.workloads[0])
    assert need > 0.85 * CRASH_IMAGE_MIN  # the default image is too small for it
    assert plan.method.crash.size == 1024**3 and plan.method.crash.states == 40
    assert crash_plan_of(*common[:2], "--states", "3", "--workdir", str(tmp_path)).method.crash.size == CRASH_IMAGE_MIN
    assert crash_plan_of(*common, "--size", "2G").method.crash.size == 2 * 1024**3  # a given size is kept
    with pytest.raises(PlanError) as exc:
        crash_plan_of(*common, "--size", "512M")
    assert "the crash test's image of 512 MiB" in exc.value.message
    assert "--size 1G" in exc.value.hint and "leave the size out" in exc.value.hint
    # a plan's crash test, sized the same way; a job larger than the recorder takes gets its largest image
    method = method_of(runs=1, warmup=0, speed=False, crash_states=3)
    big = WorkloadSpec("pgbench", "big", (("scale", 1000),))
    plan = build_plan(Target(workdir=str(tmp_path)), configs_from_names("ext4"), [big], method, None)
    assert plan.method.crash.size == CRASH_IMAGE_MAX and any("at most 4 GiB" in w for w in plan.warnings)
