"""Filesystem facts in one place: the distribution's default, a legacy format, fstab's fsck pass, a type with no
journal and each type's search space are `FsFacts` in fsfacts.py (`FACTS`), which `FsType.facts` reads and the
analysis, the risks and the search ask; nothing compares a type's name with a string.

The dummy type of tests/dummy_fs.py, registered where docs/extending.md says, declares a search space of its own
and is a legacy format: `pickfs search --dry-run` covers it, and the race's order, the answer's setup and the
risks honour its facts.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from pickfs.analysis.whole import distribution_default
from pickfs.engine.race import roles
from pickfs.fsfacts import FACTS, UNKNOWN, facts_of, searchable
from pickfs.model import Cell, FsConfig, WorkloadSpec
from pickfs.risks import config_risks
from pickfs.search.design import screening
from pickfs.search.outcome import setup
from pickfs.search.space import built_in, from_table
from pickfs.stack.filesystems import KNOWN, fs_type
from pickfs.stack.presets import PRESETS
from pickfs.workloads import workload_class
from tests.dummy_fs import FACTS_OF_DUMMY, NAME, SPACE, registered

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "pickfs"
SQLITE = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", tuple(sorted(workload_class("sqlite-tpcb").normalize({}).items())))


def _candidates(*configs: FsConfig) -> tuple[str, ...]:
    return roles([Cell(i, c, SQLITE) for i, c in enumerate(configs)], None, set()).candidates


def test_the_known_types_facts_are_what_pickfs_said_of_them():
    assert [n for n in KNOWN if facts_of(n).distribution_default] == ["ext4"]
    assert [n for n in KNOWN if facts_of(n).legacy] == ["ext2", "ext3"]
    assert {n: facts_of(n).fsck_pass for n in KNOWN if facts_of(n).fsck_pass} == {"ext2": 2, "ext3": 2, "ext4": 2}
    assert searchable() == ("ext4", "xfs", "btrfs")
    assert fs_type("ext4").facts is FACTS["ext4"] and fs_type("nosuchfs").facts is UNKNOWN
    assert config_risks(PRESETS["ext2"])[0].startswith("no journal")
    assert config_risks(FsConfig("e", "ext4", mkfs_options=("-O", "^has_journal")))[0].startswith("no journal")
    assert config_risks(PRESETS["ext3"]) == [] and config_risks(FsConfig("j", "jfs")) == []


def test_a_new_type_with_its_own_search_space_is_searched(monkeypatch):
    with registered(monkeypatch):
        assert NAME in searchable() and fs_type(NAME).facts is FACTS_OF_DUMMY
        space = built_in((NAME,))
        assert [d.name for d in space.of(NAME).dimensions] == [d.name for d in SPACE]
        assert space.size() == 8 and {c.name for c in space.expand()} >= {f"{NAME}+defaults", f"{NAME}+dummy-noatime"}
        # the screening races its default and each of its values alone
        assert {space.name(c) for c in screening(space, 0, 1)} == {
            f"{NAME}+defaults", f"{NAME}+dummy-noatime", f"{NAME}+dummy-commit15", f"{NAME}+mq-deadline"}
        # a plan's [search] section that names it searches its built-in space, and may replace a dimension
        assert [d.name for d in from_table({"filesystems": [NAME]}).of(NAME).dimensions] == [d.name for d in SPACE]
        assert [d.name for d in from_table({NAME: {"x": ["", "mount:noatime"]}}).of(NAME).dimensions] == ["x"]
    assert NAME not in searchable()


def test_a_new_types_default_legacy_fsck_pass_and_journal_are_honoured(monkeypatch):
    xfs = PRESETS["xfs"]
    with registered(monkeypatch) as dummy:
        # a legacy format: a current one is preferred within the margin, whatever the plan's order
        assert _candidates(dummy, xfs) == ("xfs", NAME)
        assert setup(dummy, SQLITE, "sqlite")["fstab"].endswith(f"{NAME}  defaults  0  2")
        assert config_risks(replace(dummy, mkfs_options=("-O", "^has_journal")))[0].startswith("no journal")
        assert config_risks(dummy) == [] and not distribution_default(dummy)
        with monkeypatch.context() as m:  # declared the distribution's default instead: plain ext4's rank
            m.setitem(FACTS, NAME, replace(FACTS_OF_DUMMY, legacy=False, distribution_default=True))
            assert _candidates(xfs, dummy) == (NAME, "xfs") and distribution_default(dummy)
            assert not distribution_default(replace(dummy, mount_options=("noatime",)))
        with monkeypatch.context() as m:  # no facts: the plan's order, checked at mount, journalled
            m.setitem(FACTS, NAME, UNKNOWN)
            assert _candidates(dummy, xfs) == (NAME, "xfs")
            assert setup(dummy, SQLITE, "sqlite")["fstab"].endswith("0  0")
            assert config_risks(replace(dummy, mkfs_options=("-O", "^has_journal"))) == []
    assert NAME not in FACTS


def test_pickfs_search_dry_run_covers_the_new_type(tmp_path):
    """The command itself, in a fresh interpreter where the dummy is registered as docs/extending.md says."""
    code = ("import sys; from pickfs.fsfacts import FACTS; from pickfs.stack.filesystems import KNOWN; "
            "from pickfs.stack.presets import PRESETS; from tests import dummy_fs as d; "
            "KNOWN[d.NAME] = d.DUMMY; FACTS[d.NAME] = d.FACTS_OF_DUMMY; PRESETS[d.NAME] = d.PRESET; "
            "from pickfs.cli.main import main; sys.argv = ['pickfs', *sys.argv[1:]]; main()")
    r = subprocess.run([sys.executable, "-c", code, "search", "--dry-run", "--fs", f"ext4,{NAME}", "--workload", "fileio",
                        "--workdir", str(tmp_path / "wd")], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "CI": "1", "COLUMNS": "300"})
    assert r.returncode == 0, r.stderr
    said = r.stdout + r.stderr
    ext4 = built_in(("ext4",)).size()
    assert f"search space: {ext4 + 8} configurations over ext4, {NAME}" in said, said
    assert f"{NAME}: left out" not in said  # this machine can build it (the ext4 driver, mkfs.ext4)


def _names_a_type(node: ast.expr, names: set[str]) -> bool:
    """A type's name, or a tuple, set or list holding one."""
    if isinstance(node, ast.Constant):
        return node.value in names
    return isinstance(node, ast.Tuple | ast.Set | ast.List) and any(_names_a_type(e, names) for e in node.elts)


def test_no_type_name_is_compared_outside_the_registries():
    """The facts' registries (stack/filesystems.py, stack/presets.py, fsfacts.py) name types; nothing else compares
    a configuration's type with a name (fstype == "ext4", fstype in ("ext2", ...), FSCK_PASS.get(fstype))."""
    names = set(KNOWN)
    host = {"engine/ceiling.py"}  # whether /dev/shm is mounted as tmpfs: the host's mount, not a configuration's type
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in ("fsfacts.py", "stack/filesystems.py", "stack/presets.py", *host):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(_names_a_type(c, names) for c in (node.left, *node.comparators)):
                wrong.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value in names for k in node.keys):
                wrong.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.Assign) and _names_a_type(node.value, names):  # DEFAULT = "ext4", a tuple of names
                wrong.append(f"{rel}:{node.lineno}")
    assert wrong == [], wrong
