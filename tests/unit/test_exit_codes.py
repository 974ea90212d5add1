"""One table of exit codes (docs/usage.md) that every command follows; a plan no cell of which this machine can run
is refused before anything is built, with its own code, and `plan check` says so with the same code."""

from __future__ import annotations

import re
from pathlib import Path

from pickfs import errors
from pickfs.cli.main import main
from pickfs.model import Method, Target
from pickfs.plan import build_plan, configs_from_names
from pickfs.usecases.preview import lacks, nothing_can_run
from tests.unit.test_usecase import TPCB

USAGE = Path(__file__).parents[2] / "docs" / "usage.md"
EVERY_CELL_LACKS = """
[target]
kind = "image"
[[config]]
preset = "raw"
[[workload]]
name = "sqlite-tpcb"
[[workload]]
name = "smallfiles"
"""


def pickfs(args: list[str], capsys) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    out, err = capsys.readouterr()
    return code, out, err


def test_the_usage_page_has_a_row_for_every_exit_code():
    table = USAGE.read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = {int(m.group(1)) for m in re.finditer(r"^\| `(\d+)` \|", table, re.M)}
    codes = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    assert rows == codes | {0}, (rows, codes)
    assert errors.NothingCanRun.exit_code == errors.EXIT_CANNOT_RUN == 3


def test_what_the_machine_lacks_is_one_line_per_reason():
    plan = build_plan(Target(workdir="/var/tmp/x"), configs_from_names("ext4,xfs,btrfs,ext2"), [TPCB], Method(), None)
    found = lacks(plan, {0: "X is not installed", 1: "X is not installed", 2: "X is not installed", 3: "Y is missing"})
    assert [lack.line() for lack in found] == [
        "X is not installed — needed by 3 cell(s): ext4/sqlite-tpcb, xfs/sqlite-tpcb, btrfs/sqlite-tpcb",
        "Y is missing — needed by ext2/sqlite-tpcb"]
    assert nothing_can_run(plan, {0: "X is not installed"}) is None
    error = nothing_can_run(plan, {i: "X is not installed" for i in range(4)})
    assert error is not None and error.exit_code == 3
    assert error.message.endswith("lacks: X is not installed — needed by every cell")


def test_a_run_no_cell_of_which_can_run_is_refused_before_anything_is_made(tmp_path, capsys):
    workdir = tmp_path / "wd"
    code, _, err = pickfs(["run", "--fs", "raw", "--workdir", str(workdir)], capsys)
    assert code == 3, err
    assert err.count("\n") == 1 and "nothing in this plan can run on this machine" in err
    assert "sqlite-tpcb needs a filesystem" in err and "needed by raw/sqlite-tpcb" in err
    assert not workdir.exists()  # no work directory, results file, ledger or image


def test_plan_check_exits_3_when_nothing_can_run_and_groups_what_is_missing(tmp_path, capsys):
    plan = tmp_path / "plan.toml"
    plan.write_text(EVERY_CELL_LACKS)
    code, out, err = pickfs(["plan", "check", str(plan)], capsys)
    assert code == 3, err
    lacking = out.split("this machine lacks:\n", 1)[1].split("\ntime:", 1)[0].splitlines()
    assert len(lacking) == 2 and all("— needed by raw/" in line for line in lacking), lacking
    assert "dry run: nothing was created" in err and "nothing in this plan can run" in err
    code, out, err = pickfs(["run", "--dry-run", "--plan", str(plan), "--workdir", str(tmp_path / "wd")], capsys)
    assert code == 3, err


def test_plan_check_exits_0_when_some_cells_can_run(tmp_path, capsys):
    code, out, err = pickfs(["run", "--dry-run", "--fs", "ext4,raw", "--workdir", str(tmp_path / "wd")], capsys)
    assert code == 0, err
    assert "needed by raw/sqlite-tpcb" in out
