"""Registries instead of string switches: filesystem types, target kinds and ledger resource kinds.

A new filesystem type goes in the places docs/extending.md names and nowhere else; the rest of pickfs
asks the registries' objects what it needs to know."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

from pickfs.analysis.explain import journal_line, process_group
from pickfs.crash.runner import crash_unavailable, fsck
from pickfs.engine.executor import cell_unavailable
from pickfs.engine.race import roles
from pickfs.engine.sidebyside import is_reference
from pickfs.fsfacts import FACTS, JBD2, REFERENCES, in_memory
from pickfs.fsfacts import is_reference as is_reference_type
from pickfs.model import Cell, Method, Plan, Target, TargetKind, WorkloadSpec
from pickfs.monitors.attribution import Scope, serves_device
from pickfs.plan import build_plan, configs_from_names
from pickfs.risks import config_risks
from pickfs.stack import cleanup, targets
from pickfs.stack.filesystems import KNOWN, fs_type, unavailable_reason
from pickfs.stack.ledger import Entry, Ledger
from pickfs.stack.presets import PRESETS, RAW_CONFIG
from pickfs.stack.provision import mkfs_command
from pickfs.stack.resources import ResourceKind
from pickfs.workloads import workload_class
from tests.dummy_fs import NAME, registered

SRC = Path(__file__).resolve().parents[2] / "src" / "pickfs"
SQLITE = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", tuple(sorted(workload_class("sqlite-tpcb").normalize({}).items())))


def test_a_new_filesystem_type_is_seen_by_plan_provisioning_fsck_references_journal_and_presets(
        monkeypatch, tmp_path):
    with registered(monkeypatch) as preset:
        # the plan: by name and among "all", and a plan builds with it
        assert configs_from_names(NAME) == [preset] and preset in configs_from_names("all")
        plan = build_plan(Target(workdir=str(tmp_path / "w")), [PRESETS["ext4"], preset], [SQLITE], Method(), None)
        # provisioning: its own mkfs, the kernel's name for it, and this machine can build it
        assert mkfs_command(preset, "/dev/loop9") == ["mkfs.ext4", "-F", "-q", "-L", "dummyfs", "-E",
                                                      "lazy_itable_init=0,lazy_journal_init=0", "/dev/loop9"]
        assert fs_type(NAME).kernel_name == "ext4" and fs_type(NAME).mounted_as("ext4")
        assert unavailable_reason(NAME) is None
        assert cell_unavailable(plan.cells()[1], plan) is None
        # its fsck: its own check (e2fsck), not fsck.dummyfs
        ok, said = fsck(NAME, str(tmp_path / "no-such-device"))
        assert ok is False and "No such file or directory" in said and "fsck.dummyfs" not in said
        assert "needs a filesystem on a block device" not in (crash_unavailable(preset, SQLITE) or "")
        # a candidate, not a reference, and safe
        cells = plan.cells()
        assert not is_reference(cells[1]) and not fs_type(NAME).reference and not is_reference_type(NAME)
        assert NAME in roles(cells, None, set()).candidates
        assert config_risks(preset) == []
        # its journal: where the monitors read it, and how reports name its thread and its counters
        journal = fs_type(NAME).journal
        assert journal is JBD2 and journal.counters.format(disk="loop9") == "/proc/fs/jbd2/loop9-8/info"
        assert process_group("jbd2/loop9-8") == journal.group
    assert NAME not in KNOWN and NAME not in PRESETS and NAME not in FACTS  # registered for the test only


def test_a_type_of_unknown_name_is_built_with_its_own_mkfs_and_checked_with_its_own_fsck():
    ft = fs_type("nosuchfs")
    assert ft.mkfs == ("mkfs.nosuchfs",) and ft.checker().argv == ("fsck.nosuchfs", "-n")
    assert ft.journal is None and ft.free_space is None and not ft.reference


def test_the_references_stand_differently_and_are_no_candidates():
    tmpfs, raw = fs_type("tmpfs"), fs_type(RAW_CONFIG.fstype)
    assert tmpfs.in_memory and not tmpfs.needs_device and tmpfs.mounts and not tmpfs.on_block_device
    assert raw.needs_device and not raw.mounts and not raw.on_block_device
    assert {n for n, ft in KNOWN.items() if ft.reference} == set(REFERENCES)
    assert all(ft.on_block_device for n, ft in KNOWN.items() if not ft.reference)
    assert unavailable_reason(RAW_CONFIG.fstype) is None
    assert in_memory("tmpfs") and config_risks(PRESETS["tmpfs"])[0].startswith("tmpfs")
    cells = [Cell(i, c, SQLITE) for i, c in enumerate((PRESETS["ext4"], PRESETS["tmpfs"], RAW_CONFIG))]
    r = roles(cells, None, set())
    assert r.candidates == ("ext4",) and r.references == {"tmpfs", "raw"} and r.in_memory == {"tmpfs"}


def test_facts_of_the_known_types():
    assert fs_type("ext3").journal is JBD2 and fs_type("ext3").mounted_as("ext4")
    assert not fs_type("ext2").mounted_as("ext4") and fs_type("ext2").journal is None
    assert fs_type("xfs").journal is not None and fs_type("xfs").free_space is not None
    assert fs_type("xfs").free_space.command("/dev/loop1", Path("/mnt/x"))[-1] == "/mnt/x"  # asks the mounted fs
    assert fs_type("ext4").free_space.command("/dev/loop1", Path("/mnt/x")) == ["e2freefrag", "/dev/loop1"]
    assert fs_type("xfs").checker().findings("Phase 1 - find\nPhase 2 - ok\n") == "Phase 2 - ok"
    assert fs_type("ext4").checker().findings("e2fsck 1.47.0\n/dev/x: clean\n") == "/dev/x: clean"
    assert serves_device("btrfs-transaction", Scope(fstype="btrfs"))
    assert serves_device("kworker/u8:3-btrfs-endio-write", Scope(fstype="btrfs"))
    assert not serves_device("btrfs-transaction", Scope(fstype="ext4"))
    assert process_group("xfsaild/loop2") == "xfsaild (xfs log)"


def test_journal_line_names_where_each_journal_is_counted():
    from pickfs.model import Trial

    def trial(name: str) -> Trial:
        return Trial(run_id="r", cell_index=0, repetition=0, phase="measured", started=0.0, elapsed_s=1.0, ok=True,
                     metrics={}, monitor={"totals": {"journal": name, "journal_write_bytes": 1024**2,
                                                     "disk_write_bytes": 2 * 1024**2}})
    assert "/proc/fs/jbd2" in (journal_line([trial("jbd2 (ext4 journal)")]) or "")
    assert "/sys/fs/xfs" in (journal_line([trial("xfs log")]) or "")


# -- target kinds ---------------------------------------------------------------------------------------
def test_every_target_kind_a_plan_may_name_is_registered():
    assert set(typing.get_args(TargetKind)) == set(targets.KINDS)


def test_target_kinds_say_what_the_call_sites_ask(tmp_path):
    image, device, directory = (targets.target_kind(Target(kind=k)) for k in ("image", "device", "directory"))
    assert image.builds and device.builds and not directory.builds  # root, mkfs, the raw baseline, crash tests
    assert image.side_by_side and directory.side_by_side and not device.side_by_side
    assert device.erases and not image.erases and not directory.erases
    assert image.images and not device.images and not directory.images
    t = Target(kind="device", device="/dev/sdz", workdir="/var/tmp/w")
    assert device.describe(t, "4 GiB") == "the device /dev/sdz (erased)"
    assert image.describe(Target(workdir="/var/tmp/w"), "4 GiB") == "4 GiB loop-backed images under /var/tmp/w"
    assert device.scheduler_queue(t) == "/dev/sdz's queue" and directory.scheduler_queue(t) == ""


def test_a_device_target_measures_one_configuration_at_a_time_and_a_directory_checks_no_kernel(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    from dataclasses import replace
    plan = Plan(Target(kind="directory", workdir=str(tmp_path / "w")), (replace(PRESETS["ext4"], fstype="nosuchfs",
                                                                                path=str(d)),), (SQLITE,), Method())
    assert cell_unavailable(plan.cells()[0], plan) is None  # an existing directory: nothing to build
    built = replace(plan, target=Target(workdir=str(tmp_path / "w")))
    assert "nosuchfs" in (cell_unavailable(built.cells()[0], built) or "")


# -- ledger resource kinds -----------------------------------------------------------------------------
def test_every_ledger_kind_carries_its_refusal_and_its_undo_together():
    assert set(cleanup.KINDS) == {"mount", "loop", "image", "dir", "scheduler", "process", "cgroup", "tracked"}
    for name, kind in cleanup.KINDS.items():
        assert isinstance(kind, ResourceKind) and kind.name == name and callable(kind.refusal) and callable(kind.undo)


def test_an_entry_of_each_kind_naming_what_is_not_pickfs_is_refused(tmp_path):
    foreign = {"mount": {"mountpoint": "/"}, "loop": {"image": "/etc/passwd"}, "image": {"path": "/etc/passwd"},
               "dir": {"path": "/etc"}, "scheduler": {"device": "/etc/passwd"}, "process": {"match": ""},
               "cgroup": {"path": "/sys/fs/cgroup/system.slice"}, "tracked": {"path": "/sys/fs/cgroup/pickfs-x"}}
    assert set(foreign) == set(cleanup.KINDS)
    for name, fields in foreign.items():
        assert cleanup.refusal(Entry("1", name, 1, 0.0, fields), tmp_path), name
    assert "unknown" in (cleanup.refusal(Entry("1", "rm-rf", 1, 0.0, {}), tmp_path) or "")


def test_holding_a_kind_no_registry_knows_is_refused_before_anything_is_recorded(tmp_path):
    led = Ledger(tmp_path / "ledger")
    with pytest.raises(ValueError, match="no resource kind 'rm-rf'"):
        with cleanup.holding(led, "rm-rf", path=str(tmp_path / "x")):
            pass
    assert led.entries() == []


def _stack_imports(path: Path) -> set[str]:
    """Every pickfs.stack module a stack module imports, deferred imports included."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pickfs.stack."):
            out.add(node.module.rsplit(".", 1)[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "pickfs.stack":
            out |= {a.name for a in node.names}
    return out


def test_no_import_cycle_in_stack_deferred_imports_included():
    graph = {p.stem: _stack_imports(p) for p in (SRC / "stack").glob("*.py")}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt}))
                   for nxt in graph.get(start, ()))

    cycles = sorted(m for m in graph if reaches(m, m, {m}))
    assert cycles == [], cycles
