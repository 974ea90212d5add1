"""Pure parts of process tracking, run locks and the shared budget of client counts."""

from pickfs.engine.schedule import SIDE_BY_SIDE_BUDGET
from pickfs.engine.sidebyside import shared_method
from pickfs.model import Method, WorkloadSpec, method_of
from pickfs.plan import budget_shares, expand_clients
from pickfs.stack.tracking import group_parent
from pickfs.workloads import workload_class

V2_MOUNTS = "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
HYBRID = ("35 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
          "36 25 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
          "40 25 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
V1_ONLY = ("35 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
           "36 25 0:31 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n")


def test_a_group_goes_below_pickfs_own_in_the_unified_hierarchy():
    assert group_parent(V2_MOUNTS, "0::/user.slice/pickfs-ab12\n") == \
        (__import__("pathlib").Path("/sys/fs/cgroup/user.slice/pickfs-ab12"), 2)
    assert group_parent(HYBRID, "8:pids:/x\n4:memory:/m\n0::/\n")[0].as_posix() == "/sys/fs/cgroup/unified"


def test_without_v2_a_v1_pids_or_freezer_hierarchy_and_else_none():
    found = group_parent(V1_ONLY, "6:freezer:/a\n4:memory:/m\n")
    assert found is not None and found[0].as_posix() == "/sys/fs/cgroup/freezer/a" and found[1] == 1
    assert group_parent("35 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", "4:memory:/m\n") is None


def test_client_counts_share_their_workloads_budget():
    cls = workload_class("pgbench")
    pg = WorkloadSpec("pgbench", "pgbench", tuple(sorted(cls.check(cls.normalize({})).items())))
    sq = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", ())
    workloads, _ = expand_clients([pg, sq], (1, 2, 4, 8))
    shares = budget_shares(workloads)
    assert shares == {"pgbench-c1": 0.25, "pgbench-c2": 0.25, "pgbench-c4": 0.25, "pgbench-c8": 0.25,
                      "sqlite-tpcb": 1.0}
    assert budget_shares([pg, sq]) == {"pgbench": 1.0, "sqlite-tpcb": 1.0}


def test_a_shared_budget_is_a_share_of_the_runs_and_fixed_rounds_stay_fixed():
    assert shared_method(Method(), 0.25).max_seconds == SIDE_BY_SIDE_BUDGET / 4
    assert shared_method(Method(max_seconds=600.0), 0.5).max_seconds == 300.0
    assert shared_method(Method(max_seconds=600.0), 1.0).max_seconds == 600.0
    fixed = method_of(rounds=5)
    assert shared_method(fixed, 0.25) == fixed
