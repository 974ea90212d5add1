"""A plan whose every cell lacks a prerequisite is refused before anything is built (exit 3), as `plan check` lists
it, one line per missing thing.

"MariaDB not installed" on a machine that has it: pickfs runs in a mount namespace of its own in which the server's
program is covered by /dev/null (not executable, so not found), the way it would look up a machine without it; the
machine's own files and every other process are untouched.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root

pytestmark = needs_root

SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])
# binds /dev/null over each of the first $1 paths, in this namespace only, then runs the rest
COVER = 'n=$1; shift; while [ "$n" -gt 0 ]; do mount --bind /dev/null "$1" || exit 97; shift; n=$((n-1)); done; exec "$@"'
PLAN = """
[[config]]
preset = "ext4"
[[config]]
preset = "xfs"
[[workload]]
name = "sysbench-oltp"
[[workload]]
name = "sqlite-tpcb"
"""


def mariadb_servers() -> list[str]:
    """The MariaDB server programs pickfs looks for, as real files (mysqld is a link to mariadbd)."""
    found = {os.path.realpath(p) for p in (shutil.which(n, path=SBIN) for n in ("mariadbd", "mysqld")) if p}
    if not found or shutil.which("sysbench") is None:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("needs MariaDB and sysbench installed (CI has them)")
    return sorted(found)


def pickfs_without(covered: list[str], workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PICKFS_WORKDIR": str(workdir), "CI": "1"}
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", COVER, "sh", str(len(covered)), *covered,
            sys.executable, "-m", "pickfs", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)


def test_a_run_whose_every_cell_lacks_mariadb_is_refused_before_anything_is_built(workdir):
    servers = mariadb_servers()
    r = pickfs_without(servers, workdir, "run", "--fs", "ext4,xfs", "--workload", "sysbench-oltp", "--blocks", "1")
    assert r.returncode == 3, r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.strip()]
    assert line.startswith("error: nothing in this plan can run on this machine"), line
    assert "MariaDB is not installed (apt-get install mariadb-server) — needed by every cell" in line
    assert not (workdir / "results.db").exists() and ledger_entries(workdir) == []
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and not (workdir / "images").exists()
    assert all(os.access(s, os.X_OK) for s in servers)  # the machine's own programs as they were


def test_plan_check_lists_the_missing_server_once_and_exits_3_only_when_nothing_can_run(workdir):
    servers = mariadb_servers()
    plan = workdir / "plan.toml"
    plan.write_text(PLAN)
    r = pickfs_without(servers, workdir, "plan", "check", str(plan))
    assert r.returncode == 0, r.stderr  # sqlite-tpcb can run: the plan runs what it can
    lacking = r.stdout.split("this machine lacks:\n", 1)[1].split("\ntime:", 1)[0].splitlines()
    assert lacking == ["  MariaDB is not installed (apt-get install mariadb-server) — needed by 2 cell(s): "
                       "ext4/sysbench-oltp, xfs/sysbench-oltp"], lacking
    plan.write_text(PLAN.split("[[workload]]\nname = \"sqlite-tpcb\"")[0])
    r = pickfs_without(servers, workdir, "plan", "check", str(plan))
    assert r.returncode == 3, r.stderr
    assert "needed by every cell" in r.stdout and "nothing in this plan can run" in r.stderr
    r = pickfs_without([], workdir, "plan", "check", str(plan))  # the same machine, nothing covered
    assert r.returncode == 0 and "MariaDB" not in r.stdout, r.stdout + r.stderr
