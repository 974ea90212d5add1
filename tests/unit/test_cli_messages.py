"""Messages that name the fix: refusals exit 2 in one line, every --help has examples, and values without
their unit or with an older name are refused with the one to write."""

from __future__ import annotations

import re
import shlex

import click
import pytest
from click.testing import CliRunner

from pickfs.cli.main import COMMANDS, cli, load_command, main


def refusal(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_a_bare_target_ci_is_read_as_a_share_and_the_message_says_how_to_write_percent(tmp_path, capsys):
    err = refusal(capsys, "run", "--target-ci", "5", "--workdir", str(tmp_path), "--dry-run")
    assert "read as a share" in err and "--target-ci 5%" in err and "0.05" in err
    assert "not above 0%" in refusal(capsys, "run", "--target-ci", "0%", "--workdir", str(tmp_path), "--dry-run")


def test_a_max_time_without_its_unit_is_refused(tmp_path, capsys):
    err = refusal(capsys, "run", "--max-time", "5", "--workdir", str(tmp_path), "--dry-run")
    assert "--max-time 5 has no unit" in err and "--max-time 5m" in err and "5s" in err


def test_an_older_scheduler_name_names_the_one_to_use(tmp_path, capsys):
    err = refusal(capsys, "run", "--scheduler", "deadline", "--workdir", str(tmp_path), "--dry-run")
    assert "use --scheduler mq-deadline" in err
    assert "none, mq-deadline, kyber, bfq" in refusal(capsys, "run", "--scheduler", "fast", "--workdir",
                                                      str(tmp_path), "--dry-run")
    help_text = CliRunner().invoke(cli, ["run", "--help"], terminal_width=200).output
    assert "none, mq-deadline, kyber, bfq" in help_text


def test_a_usage_error_points_to_the_commands_own_help(tmp_path, capsys):
    assert "(see pickfs run --help)" in refusal(capsys, "run", "--no-such-flag")


def test_a_results_file_that_does_not_exist_is_refused_and_not_made(tmp_path, capsys):
    typo = tmp_path / "TYPO.db"
    for argv in (["report"], ["results"], ["compare", "a", "b"], ["env", "diff", "a", "b"]):
        err = refusal(capsys, *argv, "--results", str(typo), "--workdir", str(tmp_path / "w"))
        assert f"no results database at {typo}" in err
        assert not typo.exists()


def test_not_root_is_a_refusal_exit_2():
    from pickfs.errors import EXIT_USAGE, NeedsRoot, PlanError

    assert NeedsRoot.exit_code == PlanError.exit_code == EXIT_USAGE


def test_env_diff_has_its_own_help():
    out = CliRunner().invoke(cli, ["env", "diff", "--help"], prog_name="pickfs").output
    assert out.startswith("Usage: pickfs env diff [OPTIONS] A B") and "Examples:" in out
    assert "--json PATH" not in out  # env's own option, not diff's


def every_command() -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    for name in COMMANDS:
        cmd = load_command(name)
        out.append((name,))
        if isinstance(cmd, click.Group):
            out += [(name, sub) for sub in cmd.commands]
    return [*out, ("env", "diff")]


@pytest.mark.parametrize("path", every_command(), ids=lambda p: " ".join(p) or "pickfs")
def test_every_help_page_ends_with_examples_of_that_command(path):
    out = CliRunner().invoke(cli, [*path, "--help"], terminal_width=200).output
    assert "Examples:" in out
    shown = [line.strip() for line in out.split("Examples:", 1)[1].splitlines() if line.strip()]
    assert shown and all(line.startswith("pickfs ") for line in shown)
    if path:
        assert any(line.startswith(f"pickfs {' '.join(path)}") for line in shown)


def run_examples() -> list[list[str]]:
    out = CliRunner().invoke(cli, ["run", "--help"], terminal_width=200).output
    lines = [line.split("#")[0].strip() for line in out.split("Examples:", 1)[1].splitlines()]
    return [shlex.split(line)[1:] for line in lines if line]


def test_run_help_lists_the_workloads_and_says_runs_are_rounds_side_by_side():
    from pickfs.workloads import REGISTRY

    out = re.sub(r"\s+", " ", CliRunner().invoke(cli, ["run", "--help"], terminal_width=200).output)
    assert all(name in out for name in REGISTRY)
    assert "side by side (the default method) it means rounds" in out


def test_the_run_examples_are_valid_plans(tmp_path, capsys):
    for argv in run_examples():
        if "--dir" in argv:
            for d in argv[argv.index("--dir") + 1::2]:  # directories of the test's own
                mine = tmp_path / "d" / d.strip("/").replace("/", "-")
                mine.mkdir(parents=True)
                argv = [mine if x == d else x for x in argv]
        argv = [str(x) for x in argv if x != "--dry-run"]
        try:
            main([*argv, "--dry-run", "--workdir", str(tmp_path / "w")])
        except SystemExit as exc:
            raise AssertionError((argv, capsys.readouterr().err)) from exc
    from pickfs.cli.crashtest import command, crash_plan

    out = CliRunner().invoke(cli, ["crashtest", "--help"], terminal_width=200).output
    for line in out.split("Examples:", 1)[1].splitlines():
        if line.strip():
            args = shlex.split(line.split("#")[0])[2:]
            crash_plan(command.make_context("crashtest", [*args, "--workdir", str(tmp_path / "w")]).params)


def test_the_dry_run_never_promises_less_than_standing_up_and_the_least_rounds():
    from pickfs.engine.estimate import estimate
    from pickfs.engine.schedule import SETUP_S
    from pickfs.model import Method, Target
    from pickfs.plan import build_plan, configs_from_names
    from pickfs.plan.flags import workload_specs

    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"), workload_specs((), (), None),
                      Method(max_seconds=5.0), None)
    [est] = estimate(plan)
    assert est.seconds >= 2 * SETUP_S + 3 * 2 and "longer than its time budget of 5 s" in est.how


def test_env_of_a_path_that_does_not_exist_is_refused_not_taken_for_its_parent(tmp_path, capsys):
    err = refusal(capsys, "env", str(tmp_path / "nonexistent"))
    assert f"{tmp_path / 'nonexistent'} does not exist" in err and "name an existing directory" in err


def test_env_diff_of_a_missing_file_says_no_such_file_not_no_run(tmp_path, capsys):
    present = tmp_path / "a.json"
    present.write_text('{"host.kernel": "6.1"}')
    for missing in (str(tmp_path / "missing.json"), "missing.json", "sub/dir/fp"):
        err = refusal(capsys, "env", "diff", str(present), missing, "--workdir", str(tmp_path / "w"))
        assert f"no such fingerprint file: {missing}" in err, err
        assert "results" not in err


def test_the_dry_run_says_the_race_stops_when_its_answer_is_settled_as_the_method_line_does():
    """The estimate said 'until every interval is within ±5%' where the race stops once the recommendation is settled
    at the margin (the method line above it, and the run's own first line, say so)."""
    from pickfs.cli.plan_check import method_lines
    from pickfs.engine.estimate import estimate
    from pickfs.model import Method, Target
    from pickfs.plan import build_plan, configs_from_names
    from pickfs.plan.flags import workload_specs

    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs"), workload_specs((), (), None),
                      Method(max_seconds=600.0), None)
    [est] = estimate(plan)
    assert "settled at a 5% margin" in " ".join(method_lines(plan))
    assert "until the recommendation is settled at a 5% margin or 10 min are spent" in est.how
    assert "every interval" not in est.how


def test_a_run_exported_to_stdout_prints_the_export_alone(tmp_path, monkeypatch, capsys):
    """`pickfs run --json -` printed the terminal report on standard output before the JSON: no script could parse
    it (`pickfs report RUN --json -` gives the JSON alone). The run here is a stored one handed back as the run
    ends (the run itself is measured in the integration tests)."""
    import json

    import pickfs.cli.run as cli_run
    from pickfs.cli.report import EXPORTS, target_key
    from pickfs.store import ResultStore
    from pickfs.usecases.run import RunOutcome
    from tests.records import fill, make_plan

    store = ResultStore(tmp_path / "r.db")
    record = store.load(fill(store, make_plan()))
    monkeypatch.setattr(cli_run, "run_plan", lambda request, events: RunOutcome("complete", record.id, "r.db", record))
    options = {target_key(e): None for e in EXPORTS}
    cli_run.run_and_show(None, {**options, "json_path": "-"})  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert json.loads(out)["run_id"] == record.id
    cli_run.run_and_show(None, options)  # type: ignore[arg-type]
    assert "vs ext4" in capsys.readouterr().out  # without an export to stdout, the report as ever
    store.close()


def test_plan_check_of_a_fault_plan_says_it_is_crashtests_and_what_it_injects(tmp_path):
    """`pickfs plan check` of a plan with `fault = "flush"` described a 9-minute speed run and exited 0, where
    `pickfs run --plan` of it is refused; the fault plan and accept_busy were not said."""
    from click.testing import CliRunner

    plan = tmp_path / "f.toml"
    plan.write_text('[[config]]\npreset = "ext4"\n[[workload]]\nname = "sqlite-tpcb"\n'
                    '[method]\nfault = "flush"\naccept_busy = true\n')
    out = CliRunner().invoke(cli, ["plan", "check", str(plan)], terminal_width=300).output
    assert "fault: a cache flush fails" in out and "pickfs crashtest --plan" in out and "pickfs run refuses" in out
    assert "a busy machine is the condition to measure" in out
