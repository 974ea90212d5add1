"""mkfs and mount options that name a device or a file are refused, per filesystem type's grammar.

A plan's `mkfs = "/dev/loopN"` once made pickfs run `mkfs.btrfs -f -q /dev/loopN /dev/loopM` and destroyed a
device nobody named; `-l logdev=` (xfs) and `device=` (btrfs mount) did the same. Here: the grammar of each type,
a fuzz test with paths and devices planted in every position, every preset and every value of the built-in search
space accepted, and the refusal where options enter (plan file, plan check, stored plan, search space, and the last
moment before mount).
"""

from __future__ import annotations

import random
import re
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from pickfs.errors import PlanError
from pickfs.model import FsConfig, Method, Target, WorkloadSpec
from pickfs.plan import build_plan, check_stored_plan
from pickfs.search.space import built_in, from_table
from pickfs.stack.filesystems import KNOWN, check_options, fs_type, mounted_type
from pickfs.stack.ledger import Ledger
from pickfs.stack.option_grammar import (
    CONSERVATIVE_MKFS,
    CONSERVATIVE_MOUNT,
    Features,
    Flag,
    Key,
    Keys,
    MkfsGrammar,
    MountGrammar,
    Shape,
)
from pickfs.stack.presets import PRESETS
from pickfs.stack.provision import mount
from pickfs.workloads import workload_class
from tests.unit.test_plan_validation import check_plan, pickfs

GRAMMAR_TYPES = ("ext2", "ext3", "ext4", "xfs", "btrfs")
OTHER_TYPES = ("jfs", "f2fs", "reiserfs", "nilfs2", "bcachefs", "mytypefs")  # the conservative rules
# what names a device or a host file, whatever option it is given to
PATHS = ("/dev/loop3", "/dev/sdb", "/tmp/x", "../x", "./loop3", "/", "~/x", "dev/loop3", "UUID=2f1e-7c0a",
         "LABEL=data", "PARTUUID=1234abcd-01", "PARTLABEL=data", "uuid=2f1e-7c0a", "/dev/disk/by-id/ata-x")
DEVICE_NAMES = ("loop3", "sdb", "sdb1", "vda", "nvme0n1p1", "dm-0", "md127", "mmcblk0p1")


def mkfs_ok(fstype: str, options: tuple[str, ...]) -> bool:
    return fs_type(fstype).mkfs_grammar.problem(options) is None


def mount_ok(fstype: str, options: tuple[str, ...]) -> bool:
    return fs_type(fstype).mount_grammar.problem(options) is None


# -- the grammar, case by case -----------------------------------------------------------------------------
@pytest.mark.parametrize("fstype,options", [
    # the issue's own three, and the forms the issue names
    ("btrfs", ("/dev/loop7",)), ("xfs", ("-l", "logdev=/dev/loop7")), ("xfs", ("-l", "size=128m,logdev=/dev/loop7")),
    ("xfs", ("-r", "rtdev=/dev/loop7")), ("xfs", ("-d", "file,name=/var/tmp/x.img")), ("xfs", ("-p", "/etc/proto")),
    ("xfs", ("-lsize=128m,logdev=/dev/x",)), ("xfs", ("-m", "uuid=2f1e7c0a-0000-0000-0000-000000000000")),
    ("xfs", ("-c", "options=/etc/xfs.conf")), ("xfs", ("-l", "internal=0,logdev=/dev/x")),
    ("ext4", ("-J", "device=/dev/loop7")), ("ext4", ("-J", "device=UUID=2f1e")), ("ext4", ("-J", "device=LABEL=log")),
    ("ext4", ("-O", "journal_dev")), ("ext4", ("-O", "^has_journal,journal_dev")), ("ext4", ("-d", "/etc")),
    ("ext4", ("-z", "/tmp/undo")), ("ext4", ("-l", "/tmp/badblocks")), ("ext4", ("-Fd", "/etc")),
    ("ext4", ("-b", "4096", "/dev/loop7")), ("ext4", ("/dev/loop7", "1G")), ("ext4", ("1G",)), ("ext4", ("--",)),
    ("ext4", ("-",)), ("ext4", ("-L",)), ("ext4", ("-U", "2f1e7c0a-0000-0000-0000-000000000000")),
    ("btrfs", ("--rootdir", "/etc")), ("btrfs", ("--rootdir=/etc",)), ("btrfs", ("-r", "/etc")),
    ("btrfs", ("--root", "/etc")), ("btrfs", ("-f", "loop7")), ("btrfs", ("--nodesize=32k", "/dev/loop7")),
    ("btrfs", ("-U", "2f1e7c0a-0000-0000-0000-000000000000")), ("btrfs", ("--device-uuid", "x")),
    ("btrfs", ("--shrink",)), ("btrfs", ("--label", "LABEL=x")), ("btrfs", ("-O", "list-all")),
    ("jfs", ("/dev/loop7",)), ("jfs", ("-q", "loop7")), ("f2fs", ("-c", "/dev/loop7")), ("f2fs", ("-c", "sdb")),
    ("f2fs", ("-f", "a", "extra")), ("f2fs", ("-l", "LABEL=x")), ("f2fs", ("--device=loop7",)), ("f2fs", ("-q", "..")),
    ("f2fs", ("-l", "-")), ("f2fs", ("-q", "--", "data")),
])
def test_mkfs_options_naming_a_device_or_a_file_are_refused(fstype, options):
    with pytest.raises(PlanError) as exc:
        check_options(FsConfig("c", fstype, mkfs_options=options))
    assert exc.value.message.startswith("c: mkfs option ") and "\n" not in exc.value.one_line()
    assert exc.value.hint.startswith("drop or change it")


@pytest.mark.parametrize("fstype,options", [
    ("btrfs", ("device=/dev/loop7",)), ("btrfs", ("compress=lzo,device=/dev/loop7",)), ("btrfs", ("device=loop7",)),
    ("btrfs", ("subvol=/x",)), ("xfs", ("logdev=/dev/loop7",)), ("xfs", ("rtdev=/dev/loop7",)),
    ("ext4", ("journal_path=/dev/loop7",)), ("ext4", ("journal_dev=1799",)), ("ext4", ("usrjquota=aquota.user",)),
    ("ext4", ("loop=/dev/loop7",)), ("ext4", ("offset=0",)), ("ext4", ("X-mount.mkdir",)), ("ext4", ("x-foo=1",)),
    ("ext4", ('context="system_u:object_r:tmp_t:s0"',)), ("tmpfs", ("size=1g,mpol=bind:0,1",)),
    ("tmpfs", ("source=/dev/loop7",)), ("jfs", ("device=loop7",)), ("jfs", ("logdev=log",)), ("jfs", ("x-mount.mkdir",)),
    ("f2fs", ("foo=/dev/x",)), ("f2fs", ("foo=UUID=abc",)), ("f2fs", ("foo=sdb1",)), ("f2fs", ('a="b"',)),
])
def test_mount_options_naming_a_device_or_a_file_are_refused(fstype, options):
    with pytest.raises(PlanError) as exc:
        check_options(FsConfig("c", fstype, mount_options=options))
    assert exc.value.message.startswith("c: mount option ")


@pytest.mark.parametrize("fstype,mkfs,mount_options", [
    ("ext4", ("-b", "4096", "-J", "size=256", "-O", "fast_commit,^has_journal", "-E", "stride=8,lazy_itable_init"),
     ("noatime", "data=writeback", "commit=30", "barrier=0", "nobarrier", "errors=remount-ro", "dax")),
    ("ext4", ("-Fq", "-b4096", "-i", "16384", "-m", "0.5", "-L", "db-disk", "-T", "largefile", "-I", "256"),
     ("nodelalloc", "journal_checksum", "lazytime")),
    ("ext2", ("-O", "^has_journal",), ("noatime",)), ("ext4", ("-L", "my label"), ()), ("ext3", ("-j", "-J", "size=64"), ("data=journal",)),
    ("xfs", ("-l", "lazy-count=1,size=128m", "-d", "agcount=16", "-m", "reflink=0,crc=1", "-i", "size=512"),
     ("logbufs=8", "logbsize=256k", "noatime", "inode64", "allocsize=64m")),
    ("xfs", ("-lsize=64m", "-n", "ftype=1", "-s", "size=4096", "-K", "-l", "internal"), ("nouuid",)),
    ("btrfs", ("-n", "32768", "--nodesize=16k", "-m", "dup", "--data", "single", "-O", "no-holes,^free-space-tree",
               "--csum", "xxhash", "-L", "pickfs", "-M"), ("compress=lzo", "compress-force=zstd:3", "commit=30",
                                                           "space_cache=v2", "ssd", "discard=async", "noatime")),
    ("tmpfs", (), ("size=4294967296", "huge=within_size", "mode=1777", "nr_inodes=1m", "mpol=interleave:0-1")),
    ("jfs", ("-q",), ("noatime", "iocharset=utf8")), ("f2fs", ("-O", "extra_attr,compression", "-l", "data"),
                                                      ("background_gc=off", "compress_algorithm=lz4")),
])
def test_the_options_people_use_are_accepted(fstype, mkfs, mount_options):
    check_options(FsConfig("c", fstype, mkfs, mount_options))


def test_every_preset_and_every_value_of_the_built_in_search_space_passes():
    for preset in PRESETS.values():
        check_options(preset)
    space = built_in(unsafe=True, workload=WorkloadSpec("sqlite-tpcb", "sqlite-tpcb"))
    values = 0
    for fs in space.filesystems:
        for d in fs.dimensions:
            for v in d.values:
                check_options(FsConfig("v", fs.fstype, v.mkfs, v.mount, v.scheduler))
                values += 1
    assert values > 30
    for config in space.expand():  # every candidate: the values put together
        check_options(config)


def test_every_known_type_carries_its_own_grammar():
    for name, ft in KNOWN.items():
        assert ft.mkfs_grammar.problem(()) is None and ft.mount_grammar.problem(()) is None, name
    for name in GRAMMAR_TYPES:
        assert isinstance(KNOWN[name].mkfs_grammar, MkfsGrammar) and isinstance(KNOWN[name].mount_grammar, MountGrammar)
    assert isinstance(KNOWN["tmpfs"].mount_grammar, MountGrammar)
    for name in OTHER_TYPES:
        assert fs_type(name).mkfs_grammar is CONSERVATIVE_MKFS and fs_type(name).mount_grammar is CONSERVATIVE_MOUNT


# -- the fuzz test: paths and devices planted in every position of each type's grammar ---------------------------
def valid_value(rule, rng: random.Random) -> str:
    if isinstance(rule, Shape):
        return rule.example
    if isinstance(rule, Features):
        return ",".join(("^" if rng.random() < 0.3 else "") + n for n in rng.sample(rule.names, rng.randint(1, min(3, len(rule.names)))))
    assert isinstance(rule, Keys)
    return ",".join(valid_key(k) for k in rng.sample(rule.keys, rng.randint(1, min(3, len(rule.keys)))))


def valid_key(key: Key) -> str:
    return key.name if key.value is None else f"{key.name}={valid_value(key.value, random.Random(0))}"


def valid_flag(flag: Flag, rng: random.Random) -> list[str]:
    use_long = bool(flag.long) and (not flag.short or rng.random() < 0.5)
    name = f"--{flag.long}" if use_long else f"-{flag.short}"
    if flag.value is None:
        return [name]
    value = valid_value(flag.value, rng)
    if rng.random() < 0.5:
        return [f"{name}={value}" if use_long else f"{name}{value}"]
    return [name, value]


def valid_mkfs(grammar: MkfsGrammar, rng: random.Random) -> list[list[str]]:
    """A few whole options (each a list of arguments) the grammar accepts."""
    return [valid_flag(rng.choice(grammar.flags), rng) for _ in range(rng.randint(1, 4))]


def plant_in_mkfs(grammar: MkfsGrammar, danger: str, rng: random.Random) -> tuple[str, ...]:
    """Valid options with `danger` planted in one position: alone, as a flag's value (attached, separate, --opt=),
    as a suboption's value or a suboption of its own in a comma list, or a feature."""
    options = valid_mkfs(grammar, rng)
    flags = [f for f in grammar.flags if f.value is not None]
    flag = rng.choice(flags)
    name = f"--{flag.long}" if flag.long and (not flag.short or rng.random() < 0.5) else f"-{flag.short}"
    forms: list[list[str]] = [[danger], [name, danger], [f"{name}={danger}" if name.startswith("--") else f"{name}{danger}"]]
    if isinstance(flag.value, Keys):
        key = rng.choice(flag.value.keys)
        before = valid_value(flag.value, rng)
        forms += [[name, f"{before},{key.name}={danger}"], [name, f"{key.name}={danger},{before}"],
                  [name, f"{before},{danger}"], [name, f"{danger}"]]
    if isinstance(flag.value, Features):
        forms.append([name, f"{valid_value(flag.value, rng)},{danger}"])
    options.insert(rng.randint(0, len(options)), rng.choice(forms))
    return tuple(a for option in options for a in option)


def plant_in_mount(grammar: MountGrammar, danger: str, rng: random.Random) -> tuple[str, ...]:
    keys = [k for k in grammar.keys if k.value is not None]
    options = [valid_key(k) for k in rng.sample(grammar.keys, rng.randint(0, 4))]
    key = rng.choice(keys)
    planted = rng.choice([danger, f"{key.name}={danger}", f"device={danger}", f"logdev={danger}",
                          f"journal_path={danger}", f"loop={danger}", f"{rng.choice(options or ['noatime'])},{danger}"])
    options.insert(rng.randint(0, len(options)), planted)
    return tuple(options)


@pytest.mark.parametrize("fstype", GRAMMAR_TYPES)
def test_fuzz_valid_options_of_each_grammar_are_accepted(fstype):
    rng = random.Random(f"valid-{fstype}")
    ft = fs_type(fstype)
    assert isinstance(ft.mkfs_grammar, MkfsGrammar) and isinstance(ft.mount_grammar, MountGrammar)
    for _ in range(400):
        options = tuple(a for o in valid_mkfs(ft.mkfs_grammar, rng) for a in o)
        assert ft.mkfs_grammar.problem(options) is None, options
        mount_options = tuple(valid_key(k) for k in rng.sample(ft.mount_grammar.keys, rng.randint(1, 5)))
        assert ft.mount_grammar.problem(mount_options) is None, mount_options


@pytest.mark.parametrize("fstype", GRAMMAR_TYPES)
def test_fuzz_a_path_or_device_planted_anywhere_is_refused(fstype):
    rng = random.Random(f"planted-{fstype}")
    ft = fs_type(fstype)
    assert isinstance(ft.mkfs_grammar, MkfsGrammar) and isinstance(ft.mount_grammar, MountGrammar)
    tried = 0
    for danger in PATHS:
        for _ in range(60):
            options = plant_in_mkfs(ft.mkfs_grammar, danger, rng)
            assert ft.mkfs_grammar.problem(options) is not None, options
            mount_options = plant_in_mount(ft.mount_grammar, danger, rng)
            assert ft.mount_grammar.problem(mount_options) is not None, mount_options
            tried += 2
    for name in DEVICE_NAMES:  # a bare device name: never alone, never a device-naming suboption
        for _ in range(30):
            options = valid_mkfs(ft.mkfs_grammar, rng)
            options.insert(rng.randint(0, len(options)), [name])
            assert ft.mkfs_grammar.problem(tuple(a for o in options for a in o)) is not None, options
            mount_options = [valid_key(k) for k in rng.sample(ft.mount_grammar.keys, 2)]
            mount_options.insert(rng.randint(0, 2), rng.choice([name, f"device={name}", f"logdev={name}"]))
            assert ft.mount_grammar.problem(tuple(mount_options)) is not None, mount_options
    assert tried > 1000


@pytest.mark.parametrize("fstype", OTHER_TYPES)
def test_fuzz_the_conservative_rules_refuse_a_path_or_device_anywhere(fstype):
    rng = random.Random(f"conservative-{fstype}")
    flags = ["-q", "-f", "-O", "-l", "--force", "-c", "--label"]
    values = ["extra_attr", "data", "4096", "lz4", "x1"]
    for danger in (*PATHS, *DEVICE_NAMES, ".", ".."):
        for _ in range(40):
            options = [rng.choice(flags) for _ in range(rng.randint(0, 3))]
            place = rng.randint(0, len(options))
            form = rng.choice([[danger], ["-c", danger], [f"--device={danger}"], ["-O", f"{rng.choice(values)},{danger}"],
                               ["-o", f"x={danger}"], [f"-c{danger}"]])
            planted = tuple(options[:place] + form + options[place:])
            assert not mkfs_ok(fstype, planted), planted
            mount_options = (rng.choice(["noatime", "iocharset=utf8", "background_gc=off"]),)
            mount_planted = rng.choice([danger, f"opt={danger}", f"device={danger}", f"noatime,{danger}"])
            assert not mount_ok(fstype, (*mount_options, mount_planted)), mount_planted
    # a plain value right after a lone flag is taken as its value (mkfs runs from an empty directory, so even if the
    # tool took it for a device it would find none); after anything else it stands alone
    assert mkfs_ok(fstype, ("-O", "extra_attr")) and mkfs_ok(fstype, ("--label", "data"))
    assert not mkfs_ok(fstype, ("--force=1", "data")) and not mkfs_ok(fstype, ("-qf", "data"))
    assert not mkfs_ok(fstype, ("data",)) and not mkfs_ok(fstype, ("-O", "a", "b"))


# -- where options enter -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("table,fragment", [
    ('fs = "btrfs"\nmkfs = "/dev/loop7"', "'/dev/loop7' stands alone"),
    ('fs = "xfs"\nmkfs = "-l logdev=/dev/loop7"', "'logdev' is not one pickfs accepts"),
    ('fs = "btrfs"\nmount = "device=/dev/loop7"', "device is not a mount option pickfs accepts for btrfs"),
    ('preset = "xfs-tuned"\nmkfs = ["-l", "size=128m,logdev=/dev/loop7"]', "'logdev' is not one pickfs accepts"),
    ('fs = "ext4"\nmkfs = "-J device=UUID=2f1e"', "'device' is not one pickfs accepts"),
    ('fs = "jfs"\nmkfs = "-q loop7"', "'loop7' is a device's name"),
])
def test_plan_check_and_a_dry_run_refuse_them_with_exit_2(tmp_path, capsys, table, fragment):
    err = check_plan(tmp_path, capsys, f"[[config]]\n{table}\n", fragment)
    assert "drop or change it" in err


def test_a_stored_plan_is_checked_again():
    tpcb = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", tuple(sorted(workload_class("sqlite-tpcb").normalize({}).items())))
    plan = build_plan(Target(workdir="/var/tmp/x"), [FsConfig("ok", "ext4")], [tpcb], Method(), None)
    check_stored_plan(plan)
    stored = replace(plan, configs=(FsConfig("b", "btrfs", mkfs_options=("/dev/loop7",)),))  # as a results file held it
    with pytest.raises(PlanError, match="stands alone"):
        check_stored_plan(stored)


@pytest.mark.parametrize("value", ["mkfs:/dev/loop7", "mkfs:-l logdev=/dev/loop7", "mount:device=/dev/loop7",
                                   "mount:logdev=/dev/loop7"])
def test_a_search_space_value_is_refused(value):
    with pytest.raises(PlanError, match=r"\[search\.xfs\] log"):
        from_table({"filesystems": ["xfs"], "xfs": {"log": ["", value]}})


def test_pickfs_search_refuses_it_with_exit_2(tmp_path, capsys):
    plan = tmp_path / "space.toml"
    plan.write_text('[search]\nfilesystems = ["btrfs"]\n[search.btrfs]\ndev = ["", "mkfs:/dev/loop7"]\n')
    code, _, err = pickfs(["search", "--plan", str(plan), "--workdir", str(tmp_path / "wd"), "--dry-run"], capsys)
    assert code == 2 and "stands alone" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "wd").exists()


def test_mount_checks_its_options_at_the_last_moment(tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    with ExitStack() as stack, pytest.raises(PlanError, match="device is not a mount option"):
        mount(ledger, stack, "/dev/null", tmp_path, "btrfs", ("compress=lzo", "device=/dev/loop7"))
    assert ledger.entries() == []  # refused before anything was recorded, let alone mounted


@pytest.mark.parametrize("fstype,mkfs,mount_options", [
    ("ext4", ("-e", "panic"), ()), ("ext4", (), ("errors=panic",)), ("btrfs", (), ("fatal_errors=panic",)),
    ("btrfs", (), ("fatal_errors=bug",)), ("ext4", (), ("abort",)),
])
def test_options_that_would_stop_the_machine_are_refused(fstype, mkfs, mount_options):
    with pytest.raises(PlanError) as refused:
        check_options(FsConfig("c", fstype, mkfs, mount_options))
    if "panic" in mkfs + mount_options and fstype == "ext4":  # the refusal says why, not only what it takes
        assert "would stop the machine pickfs runs on" in refused.value.one_line()


def test_mount_knows_a_type_by_its_driver_name():
    assert mounted_type("ext3") is KNOWN["ext3"] and mounted_type("xfs") is KNOWN["xfs"]
    assert mounted_type("f2fs").mount_grammar is CONSERVATIVE_MOUNT


def test_the_grammar_module_is_pure():
    text = Path(__file__).parent.parent.parent.joinpath("src/pickfs/stack/option_grammar.py").read_text()
    assert "import os" not in text and "subprocess" not in text and "open(" not in text


def test_the_safety_page_names_every_option_accepted():
    text = Path(__file__).parent.parent.parent.joinpath("docs/safety.md").read_text()
    section = text.split("## mkfs and mount options", 1)[1].split("\n## ", 1)[0]
    words = set(re.findall(r"[A-Za-z0-9_^-]+", section))
    missing = []
    for name in ("ext4", "xfs", "btrfs", "tmpfs"):
        ft = fs_type(name)
        grammars = [g for g in (ft.mkfs_grammar, ft.mount_grammar) if isinstance(g, (MkfsGrammar, MountGrammar))]
        for grammar in grammars:
            keys = list(grammar.keys) if isinstance(grammar, MountGrammar) else []
            if isinstance(grammar, MkfsGrammar):
                for flag in grammar.flags:
                    missing += [s for s in (f"-{flag.short}" * bool(flag.short), f"--{flag.long}" * bool(flag.long))
                                if s and s not in words]
                    if isinstance(flag.value, Keys):
                        keys += flag.value.keys
                    if isinstance(flag.value, Features):
                        missing += [f for f in flag.value.names if f not in words]
            missing += [f"{name}: {k.name}" for k in keys if k.name not in words]
    assert missing == []
