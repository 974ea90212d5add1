"""Every report tells the whole truth: settings named, options in force, kernels, --set scoping."""

from dataclasses import replace

import pytest

from pickfs.errors import PlanError
from pickfs.fingerprint import effective_keys
from pickfs.model import Trial
from pickfs.report.comparison import machine_differences, pair_runs, rankings
from pickfs.report.envdiff import diff
from pickfs.stack.blockdev import scheduler_note
from pickfs.stack.filesystems import kernel_reason, legacy_default_notes, module_available
from pickfs.stack.mountinfo import compare_options, effective_options
from tests.records import fill, make_plan

EXT4_OPTIONS = "rw\ndelalloc\nbarrier\nuser_xattr\ncommit=5\ndata=ordered\n"


def test_effective_options_of_ext4_come_from_the_driver_list():
    eff = effective_options("ext4", ("rw", "relatime"), EXT4_OPTIONS)
    assert {"barrier", "data=ordered", "commit=5", "delalloc", "relatime"} <= set(eff)
    assert effective_options("ext4", ("rw", "nobarrier"), "rw\nnobarrier\ndata=ordered\n")[1] == "nobarrier"
    # xfs and btrfs list their own options; what they never list is added
    assert "barrier" in effective_options("xfs", ("rw", "logbufs=8"))
    assert set(effective_options("btrfs", ("rw", "space_cache=v2"))) >= {"barrier", "commit=30"}
    assert "barrier" not in effective_options("btrfs", ("rw", "nobarrier"))
    assert effective_options("btrfs", ("rw", "commit=120"))[-1] != "commit=30"


def test_requested_options_are_checked_against_those_in_force():
    eff = effective_options("ext4", ("rw",), "rw\nnobarrier\ndata=writeback\n")
    assert compare_options(("barrier=0", "data=writeback"), eff, ()) == []
    assert compare_options(("data=journal",), eff, ()) == [
        "mount option data=journal not in force: the kernel uses data=writeback"]


def test_env_diff_names_a_barrier_that_mountinfo_does_not_list():
    on = effective_keys("ext4", effective_options("ext4", ("rw",), EXT4_OPTIONS))
    off = effective_keys("ext4", effective_options("ext4", ("rw", "nobarrier"), EXT4_OPTIONS.replace("barrier", "nobarrier")))
    d = diff({"mount.fstype": "ext4", **on}, {"mount.fstype": "ext4", **off})
    assert d[0].key == "mount.effective.barrier" and (d[0].a, d[0].b) == ("on", "off") and d[0].storage
    assert effective_keys("ext4", ("barrier=0",)) == {"mount.effective.barrier": "off"}


def test_legacy_ext3_barrier_note():
    assert "barriers off by default" in legacy_default_notes("ext3", ("barrier", "data=ordered"))[0]
    assert legacy_default_notes("ext3", ("nobarrier",)) == []
    assert legacy_default_notes("ext4", ("barrier",)) == []


def test_kernel_support_is_named_before_the_mkfs_tool(tmp_path):
    reason = kernel_reason("jfs", "jfs", "6.18.0", has_modules_dir=False, module_found=False)
    assert "has no jfs filesystem" in reason and "/lib/modules/6.18.0 is absent" in reason
    assert "no module 'jfs'" in kernel_reason("jfs", "jfs", "6.1.0", has_modules_dir=True, module_found=False)
    (tmp_path / "6.1.0").mkdir()
    (tmp_path / "6.1.0" / "modules.dep").write_text("kernel/fs/jfs/jfs.ko.xz:\nkernel/fs/xfs/xfs.ko.xz: a.ko\n")
    assert module_available("jfs", "6.1.0", tmp_path) and not module_available("f2fs", "6.1.0", tmp_path)
    assert not module_available("jfs", "6.2.0", tmp_path)


def test_scheduler_note_says_which_queue():
    img = scheduler_note("/dev/loop3", "mq-deadline", "mq-deadline", "vda", "mq-deadline")
    assert "loop device loop3's queue only" in img and "host disk vda's own scheduler (mq-deadline)" in img
    assert "device target" in img
    assert scheduler_note("/dev/sdb", "bfq", "bfq", None, None) == "scheduler bfq is on sdb's queue, the disk under test"


def _with_mount(store, run_id, effective, journal_mode=None):
    plan = make_plan()
    if journal_mode:
        wl = plan.workloads[0]
        settings = tuple(sorted({**dict(wl.settings), "journal_mode": journal_mode}.items()))
        plan = replace(plan, workloads=(replace(wl, settings=settings),))
    rid = fill(store, plan, run_id=run_id)
    store.save_trial(Trial(run_id=rid, cell_index=0, repetition=9, phase="warmup", started=0.1, elapsed_s=1.0, ok=True, metrics={"tps": 1.0}, raw_output="", mount={"effective_options": effective}))
    return store.load(rid)


def test_compare_names_the_settings_that_differ_and_ranks_side_by_side(store):
    a = _with_mount(store, "20260101-000000-aaaa", ["rw", "barrier", "data=ordered"])
    b = _with_mount(store, "20260101-000000-bbbb", ["rw", "nobarrier", "data=ordered"], journal_mode="DELETE")
    pairs = {p.config: p for p in pair_runs(a, b)}
    assert "journal_mode: WAL -> DELETE" in pairs["ext4"].differences
    assert "in force barrier: on -> off" in pairs["ext4"].differences
    assert pairs["xfs"].differences == ("journal_mode: WAL -> DELETE",)
    [r] = rankings(a, b)
    assert [c for c, _ in r.a] == ["ext4-nobarrier", "ext4", "xfs"] == [c for c, _ in r.b]
    assert r.a[0][1] == "2,000 tx/s"


def test_compare_names_the_machines_differences(store):
    a = store.load(fill(store, make_plan(), run_id="20260101-000000-aaaa",
                        host={"fingerprint": {"mount.fstype": "ext3", "host.cpus": "8"}}))
    b = store.load(fill(store, make_plan(), run_id="20260101-000000-bbbb",
                        host={"fingerprint": {"mount.fstype": "ext4", "host.cpus": "4"}}))
    assert machine_differences(a, b) == ["mount.fstype: ext3 -> ext4"]


def test_set_refuses_a_key_two_selected_workloads_have_unless_scoped():
    from pickfs.plan.flags import workload_specs

    with pytest.raises(PlanError) as e:
        workload_specs(("sysbench-oltp", "fileio"), ("threads=8",), None)
    assert "sysbench-oltp, fileio" in e.value.message and "--set sysbench-oltp.threads=..." in e.value.hint
    specs = {s.name: s for s in workload_specs(("sysbench-oltp", "fileio"), ("sysbench-oltp.threads=8",), None)}
    assert specs["sysbench-oltp"].get("threads") == 8 and specs["fileio"].get("threads") != 8
    # a key only one of them has needs no scope
    specs = {s.name: s for s in workload_specs(("sysbench-oltp", "fileio"), ("table_size=500",), None)}
    assert specs["sysbench-oltp"].get("table_size") == 500
    with pytest.raises(PlanError, match="not a selected workload"):
        workload_specs(("fileio",), ("pgbench.clients=2",), None)
    with pytest.raises(PlanError, match="fileio has no setting 'clients'"):
        workload_specs(("fileio",), ("fileio.clients=2",), None)
