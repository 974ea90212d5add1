"""A busy machine noticed: CPU pressure parsed, the CPU others take told apart from pickfs's, and a
run's disturbance from its slices (pure)."""

from pathlib import Path

from pickfs.model import Trial
from pickfs.monitors.attribution import Scope, pickfs_processes, serves_pickfs, split_cpu
from pickfs.monitors.procfs import parse_cpu, parse_psi, parse_task_stat
from pickfs.stats.disturbance import disturbance, slice_load

DATA = Path(__file__).parent.parent / "data"


def test_cpu_pressure_parsed():
    assert parse_psi((DATA / "proc-pressure-cpu.txt").read_text()) == (991074945, 0)
    # kernels before 5.13 have no 'full' line for the CPU
    assert parse_psi("some avg10=1.00 avg60=0.50 avg300=0.10 total=4242\n") == (4242, 0)


def test_cpus_online_counted_from_proc_stat():
    assert parse_cpu((DATA / "proc-stat.txt").read_text()).cpus == 2
    assert parse_cpu("cpu  1 2 3 4 5 6 7 8\n").cpus == 1


def test_task_stat_gives_user_plus_system_ticks():
    t = parse_task_stat("5136 (odd (name) x) R 5093 5093 32697 0 -1 4194304 101 0 0 0 17 25 0 0 20 0 1 0 312158")
    assert (t.comm, t.state, t.ppid, t.cpu_ticks) == ("odd (name) x", "R", 5093, 42)


# pid -> parent: 100 pickfs, 101 its client; 200 this cell's server (daemonised: below init), 201 its backend;
# 300 a neighbour's server, 301 its backend; 500 another engineer's shell, 501 its busy loop; 10-13 kernel threads
PPIDS = {1: 0, 2: 0, 100: 1, 101: 100, 200: 1, 201: 200, 300: 1, 301: 300, 500: 1, 501: 500,
         10: 2, 11: 2, 12: 2, 13: 2}
SCOPE = Scope(disk="loop3", major_minor="7:3", fstype="ext4", roots=(100, 200), foreign=(300,),
              beside=(Scope(disk="loop4", fstype="xfs"),))
NAMES = {1: "systemd", 2: "kthreadd", 100: "pickfs", 101: "pickfs-sqlite", 200: "postgres", 201: "postgres",
         300: "postgres", 301: "postgres", 500: "bash", 501: "python3", 10: "jbd2/loop3-8",
         11: "kworker/u8:2-loop4", 12: "jbd2/loop7-8", 13: "kworker/u8:1-events_unbound"}


def test_pickfs_is_itself_every_server_and_the_devices_under_test():
    assert pickfs_processes(PPIDS, SCOPE) == {100, 101, 200, 201, 300, 301}
    assert serves_pickfs("jbd2/loop3-8", SCOPE) and serves_pickfs("xfsaild/loop4", SCOPE)
    assert not serves_pickfs("jbd2/loop7-8", SCOPE) and not serves_pickfs("kworker/u8:1-events_unbound", SCOPE)


def test_cpu_split_between_pickfs_others_and_the_kernel():
    before = {pid: 1000 for pid in PPIDS if pid != 501}  # 501 started between the scans
    after = {pid: (NAMES[pid], 1000 + 10 * pid, PPIDS[pid]) for pid in PPIDS if pid != 301}  # 301 ended
    after[501] = ("python3", 70, 500)
    kernel_ours = {NAMES[p]: serves_pickfs(NAMES[p], SCOPE) for p in (10, 11, 12, 13)}
    sides, by_name = split_cpu(before, after, pickfs_processes(PPIDS, SCOPE), kernel_ours)
    assert sides.pickfs == 10 * (100 + 101 + 200 + 201 + 300) + 10 * (10 + 11)
    assert sides.others == 10 * (1 + 500) + 70  # init, the shell, and the new busy loop in full
    assert sides.kernel == 10 * (2 + 12 + 13)
    assert by_name == {"systemd": 10, "bash": 5000, "python3": 70}
    # a kworker that changed its work (and name) is the same thread: only its new ticks count
    sides, _ = split_cpu({13: 1000}, {13: ("kworker/u8:1-loop3", 1005, 2)}, set(), {"kworker/u8:1-loop3": True})
    assert sides.pickfs == 5
    # a reused pid (fewer ticks than before) is a new task: all of its ticks count
    sides, _ = split_cpu({600: 1000}, {600: ("make", 30, 1)}, set(), {})
    assert sides.others == 30


def trial(other_cpu_s: float | None, elapsed: float = 10.0, steal: float = 0.0, cpus: int = 2,
          psi_cpu: float | None = 0.1, phase: str = "measured", ok: bool = True) -> Trial:
    totals: dict[str, object] = {"elapsed_s": elapsed, "cpu_steal_share": steal, "psi_some_share": 0.02}
    if other_cpu_s is not None:
        totals.update({"other_cpu_s": other_cpu_s, "cpus": cpus})
    if psi_cpu is not None:
        totals["psi_cpu_some_share"] = psi_cpu
    return Trial(run_id="r", cell_index=0, repetition=0, phase=phase, started=0.0, elapsed_s=elapsed, ok=ok,  # type: ignore[arg-type]
                 monitor={"totals": totals, "other_cpu": [{"comm": "stress", "cpu_s": other_cpu_s or 0.0}]})


def test_not_recorded_says_nothing():
    assert disturbance([]) is None
    assert disturbance([trial(None), trial(None)]) is None  # runs stored before: no record, no verdict
    assert disturbance([Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=0.0,
                              elapsed_s=1.0, ok=True)]) is None
    assert slice_load(trial(None)) is None


def test_a_quiet_run_is_not_disturbed():
    d = disturbance([trial(0.2) for _ in range(20)])  # others took 0.02 of 2 cores
    assert d is not None and not d.disturbed and d.busy_slices == 0 and d.slices == 20
    assert abs(d.other_cores - 0.02) < 1e-9


def test_a_run_loaded_for_two_slices_in_five():
    d = disturbance([trial(0.1), trial(13.0), trial(0.1), trial(13.0), trial(0.1), trial(50.0, phase="warmup")])
    assert d is not None and d.disturbed
    assert (d.slices, d.busy_slices, d.by_others, d.by_steal, d.cpus) == (5, 2, 2, 0, 2)
    assert abs(d.busy_share - 0.4) < 1e-9 and abs(d.other_cores - 1.3) < 1e-9
    assert d.others == ("stress",) and d.cpu_pressure is not None and abs(d.cpu_pressure - 0.1) < 1e-9


def test_time_weighted_and_the_thresholds():
    # half a core of two (a quarter of the CPUs) is busy; a little less is not
    assert slice_load(trial(5.0)).busy and not slice_load(trial(4.9)).busy  # type: ignore[union-attr]
    # one busy slice of 1 s among 19 quiet 1 s slices and one 10 s quiet slice: 1/29 of the time, under 5%
    d = disturbance([trial(1.0, elapsed=1.0)] + [trial(0.0, elapsed=1.0)] * 19 + [trial(0.0, elapsed=10.0)])
    assert d is not None and d.busy_slices == 1 and not d.disturbed
    d = disturbance([trial(1.0, elapsed=1.0)] + [trial(0.0, elapsed=1.0)] * 19)  # 1/20 = 5%: disturbed
    assert d is not None and d.disturbed


def test_steal_makes_a_slice_busy_and_failed_slices_do_not_count():
    d = disturbance([trial(0.0, steal=0.2), trial(0.0, steal=0.05), trial(20.0, ok=False)])
    assert d is not None and (d.slices, d.busy_slices, d.by_steal, d.by_others) == (2, 1, 1, 0)
    assert abs(d.steal_share - 0.2) < 1e-9


def test_a_kernel_without_pressure_files():
    d = disturbance([trial(13.0, psi_cpu=None)])
    assert d is not None and d.disturbed and d.cpu_pressure is None


def test_garbled_records_are_not_trusted():
    bad = Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=0.0, elapsed_s=1.0, ok=True,
                monitor={"totals": {"other_cpu_s": "lots", "elapsed_s": 1.0}, "other_cpu": ["x", {"comm": 3}]})
    assert disturbance([bad]) is None
    odd = Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=0.0, elapsed_s=1.0, ok=True,
                monitor={"totals": {"other_cpu_s": 1.0, "elapsed_s": 0}})
    assert disturbance([odd]) is None
