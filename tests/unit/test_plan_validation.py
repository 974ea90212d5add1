"""Bad input is refused before anything is created: exit 2 and one line naming the fix, never "internal error".

One test per defect the Hardening issue (item 5) found, then the dry run (`pickfs run --dry-run`,
`pickfs plan check`): what it prints, and that it creates nothing.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pickfs.cli.main import main
from pickfs.errors import PlanError
from pickfs.plan import load_plan_file, parse_plan_text
from pickfs.units import parse_duration, parse_size

EXAMPLES = sorted((Path(__file__).parent.parent.parent / "examples").glob("*.toml"))


def pickfs(args: list[str], capsys) -> tuple[int, str, str]:
    """Run the pickfs command in-process, as its console script does (main's error handling included)."""
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    out, err = capsys.readouterr()
    return code, out, err


def refused(args: list[str], capsys, fragment: str) -> str:
    code, _, err = pickfs(args, capsys)
    err = err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error:"), err
    assert "internal error" not in err and "Traceback" not in err
    assert fragment in err, err
    return err


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(text)
    return path


def check_plan(tmp_path: Path, capsys, text: str, fragment: str) -> str:
    workdir = tmp_path / "wd"
    err = refused(["plan", "check", str(write(tmp_path, text))], capsys, fragment)
    refused(["run", "--dry-run", "--workdir", str(workdir), "--plan", str(tmp_path / "plan.toml")], capsys, fragment)
    assert not workdir.exists()
    return err


# -- the eleven sites ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,fragment", [
    ("[method]\nmonitor_interval = 0", "monitor_interval = 0 is out of range"),
    ("[method]\nquiesce_seconds = -1.0", "quiesce_seconds = -1.0 is out of range"),
    ("[method]\nruns = 9223372036854775807", "runs = 9223372036854775807 is out of range"),
    ("[method]\nslice_seconds = nan", "slice length nan"),
    ("[method]\nmax_seconds = inf", "max_seconds must be a finite number"),
    ("[method]\ncrash_size = 0", "crash_size = 0 is out of range"),
    ("[method]\nblocks = 1000000", "blocks = 1000000 is out of range"),
    ("[method]\nmax_runs = \"5\"", "max_runs must be a whole number"),
    ("[method]\nside_by_side = 1", "side_by_side must be bool"),
    ("[method]\nseed = -1", "seed = -1 is out of range"),
])
def test_method_values_are_checked_for_type_and_range(tmp_path, capsys, text, fragment):
    check_plan(tmp_path, capsys, 'fs = ["ext4"]\n' + text, fragment)


@pytest.mark.parametrize("text,fragment", [
    ('method = 3\nfs = ["ext4"]', "[method] must be a table, not a whole number"),
    ('method = ["runs"]\nfs = ["ext4"]', "[method] must be a table, not a list"),
    ('target = "image"\nfs = ["ext4"]', "[target] must be a table, not a string"),
    ('config = 5', "config must be an array of tables"),
    ('config = [1, 2]', "config #1 must be a table"),
    ('fs = ["ext4"]\nworkload = "sqlite-tpcb"', "workload must be an array of tables"),
])
def test_method_and_other_tables_must_be_tables(tmp_path, capsys, text, fragment):
    check_plan(tmp_path, capsys, text, fragment)


def test_fs_a_string_instead_of_a_list(tmp_path, capsys):
    err = check_plan(tmp_path, capsys, 'fs = "ext4"', "fs must be a list of presets or filesystem types, not a string")
    assert 'fs = ["ext4", "xfs"]' in err


@pytest.mark.parametrize("text,fragment", [
    ("[[config]]\nname = 5\npreset = \"ext4\"", "[[config]] #1 name must be a string, not a whole number"),
    ("[[config]]\npreset = 5", "[[config]] #1 preset must be a string"),
    ("[[config]]\nfs = 4.5", "[[config]] #1 fs must be a string, not a number"),
    ("[[config]]\npreset = \"ext4\"\nbase = 3", "[[config]] #1 base must be a string"),
    ("[[config]]\npreset = \"ext4\"\npath = 1", "[[config]] #1 path must be a string"),
    ("fs = [\"ext4\"]\n[[workload]]\nname = 7", "[[workload]] #1 name must be a string"),
    ("fs = [\"ext4\"]\n[[workload]]\nlabel = 7", "[[workload]] #1 label must be a string"),
    ("fs = [1]", "fs must be a list of presets or filesystem types"),
    ("fs = [\"ext4\"]\nbaseline = 1", "baseline must be a string"),
])
def test_a_name_that_is_a_number(tmp_path, capsys, text, fragment):
    check_plan(tmp_path, capsys, text, fragment)


@pytest.mark.parametrize("mkfs", ['"-L \'unbalanced"', "'-L \"x'", '"-O \\\\"'])
def test_an_unbalanced_quote_in_mkfs(tmp_path, capsys, mkfs):
    text = f'[[config]]\nfs = "ext4"\nmkfs = {mkfs}'
    err = check_plan(tmp_path, capsys, text, "cannot be split into arguments")
    assert "balance the quotes" in err


def test_a_control_character_in_mount_options(tmp_path, capsys):
    check_plan(tmp_path, capsys, '[[config]]\nfs = "ext4"\nmount = "noatime\\u0000"', "control character")


@pytest.mark.parametrize("depth", [50, 3000])
def test_deeply_nested_arrays(tmp_path, capsys, depth):
    text = f"fs = {'[' * depth}{']' * depth}\n"
    fragment = "nests arrays or tables too deeply" if depth > 500 else "fs must be a list"
    check_plan(tmp_path, capsys, text, fragment)


def test_deeply_nested_arrays_in_a_setting(tmp_path, capsys):
    check_plan(tmp_path, capsys, 'fs = ["ext4"]\n[[workload]]\nscale = [[[[[1]]]]]',
               "scale must be a string, a number or true/false, not a list")


@pytest.mark.parametrize("name", ['["sqlite-tpcb"]', '{ a = 1 }', "[]"])
def test_a_workload_name_that_is_a_list(tmp_path, capsys, name):
    check_plan(tmp_path, capsys, f'fs = ["ext4"]\n[[workload]]\nname = {name}', "[[workload]] #1 name must be a string")


@pytest.mark.parametrize("flag", ["--workload", "--fs"])
def test_a_workload_or_fs_flag_that_is_empty(tmp_path, capsys, flag):
    refused(["run", "--dry-run", "--workdir", str(tmp_path / "wd"), flag, ""], capsys, f"{flag} is empty")


@pytest.mark.parametrize("size", ["99999999T", "1e400", "-1G", "18446744073709551616"])
def test_size_out_of_range(tmp_path, capsys, size):
    err = refused(["run", "--dry-run", "--workdir", str(tmp_path / "wd"), "--size", size], capsys, "size")
    assert "4G" in err
    assert not (tmp_path / "wd").exists()


def test_size_out_of_range_in_the_plan(tmp_path, capsys):
    check_plan(tmp_path, capsys, '[target]\nsize = "99999999T"\n[[config]]\npreset = "ext4"', "out of range")


def test_units_have_ranges():
    for bad in (True, None, [1], -1, 2**80, float("nan"), float("inf"), "99999999T"):
        with pytest.raises(PlanError):
            parse_size(bad)
    for bad in (True, None, [1], -1, float("nan"), float("inf"), "1e999s", "99999999h", 10**400):
        with pytest.raises(PlanError):
            parse_duration(bad)
    assert parse_size("1024T") == 1024**5 and parse_size(0) == 0
    assert parse_duration("30min") == 1800.0


@pytest.mark.parametrize("case", ["missing-dir", "is-dir", "same-file"])
def test_export_targets_are_checked_before_anything_runs(tmp_path, capsys, case):
    workdir = tmp_path / "wd"
    args = ["run", "--dry-run", "--workdir", str(workdir), "--fs", "ext4"]
    if case == "missing-dir":
        args += ["--json", str(tmp_path / "no" / "such" / "out.json")]
        fragment = "does not exist"
    elif case == "is-dir":
        args += ["--html", str(tmp_path)]
        fragment = "is a directory"
    else:
        args += ["--json", str(tmp_path / "x"), "--csv", str(tmp_path / "x")]
        fragment = "name the same file"
    refused(args, capsys, fragment)
    assert not workdir.exists()


def test_export_targets_are_checked_first_by_execute_plan(tmp_path, monkeypatch):
    """A real run (and `pickfs crashtest`) checks the export paths before root, the store or the ledger."""
    from pickfs.cli import run as run_cli
    from pickfs.usecases import run as usecase

    def must_not_be_reached(*args, **kwargs):
        raise AssertionError("reached before the export paths were checked")

    monkeypatch.setattr(usecase, "require_root", must_not_be_reached)
    monkeypatch.setattr(usecase, "open_store", must_not_be_reached)
    monkeypatch.setattr(usecase, "ledger_for", must_not_be_reached)
    plan = load_plan_file(EXAMPLES[0], workdir=str(tmp_path / "wd"))
    o = {"json_path": tmp_path / "missing" / "out.json", "markdown_path": None, "csv_path": None, "html_path": None,
         "workdir": str(tmp_path / "wd"), "results_path": None}
    with pytest.raises(PlanError, match="does not exist"):
        run_cli.execute_plan(plan, o)


def test_report_checks_its_export_targets_before_opening_the_results(tmp_path, capsys):
    results = tmp_path / "results.db"
    refused(["report", "latest", "--results", str(results), "--markdown", str(tmp_path / "nope" / "r.md")], capsys,
            "does not exist")
    assert not results.exists()


@pytest.mark.parametrize("flag", ["--resume", "--size", "--fs", "--baseline", "--duration", "--max-time",
                                  "--slice", "--target-ci", "--device", "--workdir"])
def test_empty_flag_values(tmp_path, capsys, flag):
    results = tmp_path / "results.db"
    workdir = tmp_path / "wd"
    args = ["run", "--workdir", str(workdir), "--results", str(results), flag, ""]
    if flag == "--workdir":
        args = ["run", "--results", str(results), flag, ""]
    refused(args, capsys, f"{flag} is empty")  # no --dry-run: refused before anything is built or opened
    assert not results.exists() and not workdir.exists()


def test_resume_cannot_be_a_dry_run(tmp_path, capsys):
    results = tmp_path / "results.db"
    refused(["run", "--dry-run", "--resume", "20240101-000000-abcd", "--results", str(results),
             "--workdir", str(tmp_path / "wd")], capsys, "--dry-run")
    assert not results.exists()


def test_results_path_that_is_a_directory(tmp_path, capsys):
    refused(["run", "--dry-run", "--results", str(tmp_path), "--workdir", str(tmp_path / "wd")], capsys,
            "is not a file")


@pytest.mark.parametrize("text,fragment", [
    ('fs = ["ext4"]\n[[workload]]\nname = "tree"\nseed = "abc"', "tree seed must be a whole number"),
    ('fs = ["ext4"]\n[[workload]]\nname = "pgbench"\nlog_sampling = "x"', "log_sampling must be a number"),
    ('fs = ["ext4"]\n[[workload]]\nname = "command"\ncommand = 5', "needs the command to run"),
    ('fs = ["ext4"]\n[[workload]]\nname = "command"\ncommand = "x"\nenv = { A = [1] }', "env must be a table of values"),
    ('fs = ["ext4"]\n[[workload]]\nname = "tpcc"\nforced_writes = { a = 1 }', "forced_writes must be a string"),
    ('fs = ["ext4"]\n[[workload]]\nname = "tpcc"\nbackend = ["sqlite"]', "backend must be a string"),
    ('fs = ["ext4"]\n[[workload]]\nduration = nan', "duration is nan, not a finite number"),
    ('fs = ["ext4"]\n[[workload]]\nduration = -3', "duration -3 is out of range"),
    ('fs = ["ext4"]\n[[workload]]\nname = "wal"\nmethods = [["fsync"]]', "methods must be a value or a list"),
])
def test_workload_settings_are_checked_for_type(tmp_path, capsys, text, fragment):
    check_plan(tmp_path, capsys, text, fragment)


def test_plan_file_that_is_a_directory_or_not_utf8(tmp_path, capsys):
    refused(["plan", "check", str(tmp_path)], capsys, "is a directory")
    path = tmp_path / "bad.toml"
    path.write_bytes(b"fs = [\"\xff\"]\n")
    refused(["plan", "check", str(path)], capsys, "not UTF-8")


def test_parse_plan_text_checks_the_top_level():
    with pytest.raises(PlanError, match="unknown key"):
        parse_plan_text("colour = 1")


# -- every shipped example passes -------------------------------------------------------------------
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_passes_plan_check(path, capsys):
    code, out, err = pickfs(["plan", "check", str(path)], capsys)
    assert code == 0, err
    assert "configurations:" in out and "time: about" in out and "this machine lacks" in out


# -- the dry run ---------------------------------------------------------------------------------------
def loop_devices(under: Path) -> set[str]:
    """Loop devices backed by files under `under` (other processes on the machine may attach their own)."""
    found = set()
    for p in glob.glob("/sys/block/loop*/loop/backing_file"):
        try:
            if Path(p).read_text().strip().startswith(str(under)):
                found.add(p)
        except OSError:
            pass
    return found


def test_dry_run_creates_nothing(tmp_path, capsys):
    workdir = tmp_path / "wd"
    results = tmp_path / "results.db"
    loops = loop_devices(tmp_path)
    before = set(os.listdir(tmp_path))
    for args in (["run", "--dry-run", "--fs", "ext4,xfs,btrfs,tmpfs", "--workload", "sqlite-tpcb"],
                 ["run", "--dry-run", "--plan", str(EXAMPLES[0]), "--json", str(tmp_path / "out.json")],
                 ["run", "--dry-run", "--plan", str(EXAMPLES[-1]), "--one-at-a-time", "--runs", "3"]):
        code, out, err = pickfs([*args, "--workdir", str(workdir), "--results", str(results)], capsys)
        assert code == 0, err
        assert "dry run: nothing was created" in err
    assert set(os.listdir(tmp_path)) == before  # no work directory, results database, ledger or export
    assert not workdir.exists() and not results.exists() and not (tmp_path / "out.json").exists()
    assert loop_devices(tmp_path) == loops == set()


def test_dry_run_prints_the_matrix_method_and_estimate(tmp_path, capsys):
    code, out, _ = pickfs(["run", "--dry-run", "--workdir", str(tmp_path / "wd"), "--fs", "ext4,ext4-nobarrier",
                           "--scheduler", "mq-deadline", "--blocks", "2", "--rounds", "4", "--slice", "1s"], capsys)
    assert code == 0
    assert "2 configuration(s) x 1 workload(s) = 2 cells" in out
    assert "ext4-nobarrier: fs ext4; mkfs (defaults); mount nobarrier; scheduler mq-deadline" in out
    assert "every configuration built 2 time(s)" in out and "exactly 4 rounds" in out and "slices: 1 s" in out
    # fixed rounds: 2 blocks x (2 x 2.5 s setup + 2 warm-up slices of 1 s + 4 rounds x 2 x 1.3 s) = 34.8 s
    assert "sqlite-tpcb: 35 s, 4 rounds x 2 block(s) x 2 configurations, 1 s slices" in out


def test_estimate_side_by_side_is_the_budget_unless_rounds_are_fixed():
    from dataclasses import replace

    from pickfs.engine.estimate import estimate
    from pickfs.engine.schedule import SIDE_BY_SIDE_BUDGET, Slot, estimate_seconds
    from pickfs.model import Method, Target, WorkloadSpec, method_of
    from pickfs.plan import build_plan, resolve_fs_name
    from pickfs.workloads import workload_class

    cls = workload_class("sqlite-tpcb")
    spec = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", tuple(sorted(cls.normalize({}).items())))
    configs = [resolve_fs_name("ext4"), resolve_fs_name("xfs")]
    plan = build_plan(Target(), configs, [spec], Method(), None)
    assert estimate(plan)[0].seconds == SIDE_BY_SIDE_BUDGET
    plan = build_plan(Target(), configs, [spec], Method(max_seconds=120.0), None)
    assert estimate(plan)[0].seconds == 120.0
    plan = build_plan(Target(), configs, [spec], method_of(rounds=10, target_ci=0.02), None)
    assert estimate(plan)[0].seconds == SIDE_BY_SIDE_BUDGET  # rounds is only the fewest then
    plan = build_plan(Target(), configs, [spec], method_of(rounds=10, blocks=1, warmup=0), None)
    assert estimate(plan)[0].seconds == pytest.approx(2 * 2.5 + 10 * 2 * (1.0 + 0.3))
    plan = build_plan(Target(), configs, [spec], replace(Method(), side_by_side=False, runs=3), None)
    expected = sum(estimate_seconds(Slot(c, r), plan.method) for r in range(3) for c in plan.cells())
    assert estimate(plan)[0].seconds == pytest.approx(expected)
    # a cell this machine cannot run is left out
    assert estimate(plan, {0: "no"})[0].seconds == pytest.approx(expected / 2)


def test_dry_run_names_what_this_machine_lacks(tmp_path, capsys):
    # a type with no mkfs tool anywhere is refused by validation, with the presets listed
    refused(["run", "--dry-run", "--workdir", str(tmp_path / "wd"), "--fs", "ext4,notarealfs9"], capsys,
            "unknown preset or filesystem 'notarealfs9'")
    code, out, _ = pickfs(["run", "--dry-run", "--workdir", str(tmp_path / "wd"), "--fs", "ext4,raw"], capsys)
    assert code == 0
    assert "sqlite-tpcb needs a filesystem" in out and "— needed by raw/sqlite-tpcb" in out


def test_plan_check_through_click_runner():
    from pickfs.cli.plan_check import command

    result = CliRunner().invoke(command, ["check", str(EXAMPLES[0])])
    assert result.exit_code == 0, result.output
    assert "configurations:" in result.output
