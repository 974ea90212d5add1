"""The grammar of the mkfs and mount options pickfs passes on (pure).

pickfs runs mkfs and mount as root with the options a plan names. An option that names another
device or a host file (an external log or journal, an extra device, a file to read or write, a
device by UUID= or LABEL=) would let a plan format or read what nobody confirmed, so every option
is checked against its filesystem type's grammar when the plan is built and again right before
mkfs and mount run:

- a type with a grammar of its own (`MkfsGrammar` and `MountGrammar`: ext2/ext3/ext4 through mke2fs,
  xfs, btrfs, tmpfs) accepts exactly the flags and suboptions listed, each value of its own shape
  (a number, a size, one of a few words);
- any other type takes the conservative rules (`CONSERVATIVE_MKFS`, `CONSERVATIVE_MOUNT`): flags and
  values of plain characters only, nothing with '/', no UUID=/LABEL=/PARTUUID=/PARTLABEL= form, no
  kernel device name (loop3, sdb1), no argument that stands alone; and mkfs and mount run from
  inside the empty mount point pickfs just made, so a bare relative name reaches nothing.

Each grammar's `problem(options)` says, in one line, what is wrong with the first option refused
(None: every option is accepted); its `hint` says what the type takes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol


class ValueRule(Protocol):
    """The shape of an option's value."""

    @property
    def words(self) -> str: ...

    def problem(self, value: str) -> str | None: ...


class OptionGrammar(Protocol):
    """What a filesystem type accepts as mkfs (or mount) options."""

    @property
    def hint(self) -> str: ...

    def problem(self, options: Sequence[str]) -> str | None: ...


@dataclass(frozen=True)
class Shape:
    """A value matched whole by a pattern: a number, a size, one of a few words."""

    words: str  # what it accepts, in an error's words
    pattern: str
    example: str  # one value it accepts
    why: str = ""  # why the values it leaves out are left out, when that is not plain

    def problem(self, value: str) -> str | None:
        if re.fullmatch(self.pattern, value):
            return None
        return f"{value!r} is not {self.words}" + (f" ({self.why})" if self.why else "")


def one_of(*choices: str) -> Shape:
    return Shape("one of " + ", ".join(choices), "|".join(re.escape(c) for c in choices), choices[0])


NUMBER = Shape("a whole number", r"[0-9]+", "8")
SIZE = Shape("a size such as 4096, 64k or 128m", r"(?i)[0-9]+(?:[kmgtpebs]|[kmgtpe]i?b)?", "128m")
SWITCH = one_of("0", "1")
PERCENT = Shape("a number such as 5 or 0.5", r"[0-9]+(?:\.[0-9]+)?", "0.5")
LABEL = Shape("a label of at most 16 letters, digits, spaces and _ . + -", r"[A-Za-z0-9_.+ -]{1,16}", "pickfs")


@dataclass(frozen=True)
class Key:
    """One suboption of a comma list (`-E stride=8,discard`) or one mount option: its name and value."""

    name: str
    value: ValueRule | None = None  # None: it takes no value
    bare: bool = False  # with a value: it may also stand alone (lazy_itable_init, compress)


@dataclass(frozen=True)
class Keys:
    """A comma-separated list of suboptions, each `name` or `name=value` of its own shape."""

    keys: tuple[Key, ...]

    @property
    def words(self) -> str:
        return "a comma list of " + ", ".join(sorted(k.name for k in self.keys))

    def problem(self, value: str) -> str | None:
        by_name = {k.name: k for k in self.keys}
        for part in value.split(","):
            name, eq, v = part.partition("=")
            key = by_name.get(name)
            if key is None:
                return (f"{name!r} is not one pickfs accepts (it takes {', '.join(sorted(by_name))})" if name
                        else f"{value!r} holds an empty item")
            if not eq:
                if key.value is not None and not key.bare:
                    return f"{name} needs a value ({key.value.words})"
                continue
            if key.value is None:
                return f"{name} takes no value"
            problem = key.value.problem(v)
            if problem:
                return f"{name}: {problem}"
        return None


@dataclass(frozen=True)
class Features:
    """A comma-separated list of feature names, each maybe turned off with a leading '^'."""

    names: tuple[str, ...]

    @property
    def words(self) -> str:
        return "a comma list of features (" + ", ".join(self.names) + "), each maybe with ^ before it"

    def problem(self, value: str) -> str | None:
        for part in value.split(","):
            if part.removeprefix("^") not in self.names:
                return f"{part!r} is not a feature pickfs accepts (it takes {', '.join(self.names)})"
        return None


@dataclass(frozen=True)
class Flag:
    """One command-line option of a mkfs tool: `-b VALUE`, `--nodesize VALUE`, `-f`."""

    short: str = ""  # one letter, without its dash
    long: str = ""  # without its dashes
    value: ValueRule | None = None  # None: it takes no value

    @property
    def shown(self) -> str:
        return f"-{self.short}" if self.short else f"--{self.long}"


@dataclass(frozen=True)
class MkfsGrammar:
    """Every option a mkfs tool is given here, read as the tool's getopt reads them: flags that
    cluster (`-Fq`), a value attached (`-b4096`, `--nodesize=32k`) or in the next argument. An
    argument that is no option and no option's value (a positional one: a device) is refused."""

    tool: str
    flags: tuple[Flag, ...]

    @property
    def hint(self) -> str:
        shown = " ".join(f.shown for f in self.flags)
        return (f"drop or change it: pickfs gives {self.tool} only {shown}, each value of its own shape, and no device "
                "or file but the one it formats")

    def problem(self, options: Sequence[str]) -> str | None:
        i = 0
        while i < len(options):
            token, following = options[i], options[i + 1] if i + 1 < len(options) else None
            if token.startswith("--") and len(token) > 2:
                problem, used = self._long(token, following)
            elif token.startswith("-") and len(token) > 1:
                problem, used = self._short(token, following)
            else:
                return (f"{token!r} stands alone (a device or a file, to {self.tool}): pickfs names the one "
                        "device mkfs formats")
            if problem:
                return problem
            i += 1 + used
        return None

    def _long(self, token: str, following: str | None) -> tuple[str | None, int]:
        """What is wrong with `--name[=value]`, and whether it took the argument after it as its value."""
        name, eq, value = token[2:].partition("=")
        flag = next((f for f in self.flags if f.long == name), None)
        if flag is None:
            return f"{token!r}: --{name} is not an option pickfs accepts for {self.tool}", 0
        if flag.value is None:
            return (f"{token!r}: --{name} takes no value" if eq else None), 0
        if eq:
            return _value_problem(token, flag.value, value), 0
        if following is None:
            return f"{token!r} needs a value ({flag.value.words})", 0
        return _value_problem(f"{token} {following}", flag.value, following), 1

    def _short(self, token: str, following: str | None) -> tuple[str | None, int]:
        """What is wrong with a cluster of short flags (`-Fq`, `-b4096`, `-b`), and whether the last took the
        argument after it as its value."""
        for j, letter in enumerate(token[1:], start=2):
            flag = next((f for f in self.flags if f.short == letter), None)
            if flag is None:
                return f"{token!r}: -{letter} is not an option pickfs accepts for {self.tool}", 0
            if flag.value is None:
                continue
            if token[j:]:
                return _value_problem(token, flag.value, token[j:]), 0
            if following is None:
                return f"{token!r} needs a value ({flag.value.words})", 0
            return _value_problem(f"{token} {following}", flag.value, following), 1
        return None, 0


def _value_problem(shown: str, rule: ValueRule, value: str) -> str | None:
    problem = rule.problem(value)
    return f"{shown!r}: {problem}" if problem else None


@dataclass(frozen=True)
class MountGrammar:
    """Every mount option a type is given here: the kernel's own flags for every type (noatime, sync...)
    and the type's own options, each `name` or `name=value` of its own shape."""

    what: str  # "ext2/ext3/ext4"
    keys: tuple[Key, ...]

    @property
    def hint(self) -> str:
        return (f"drop or change it: pickfs mounts {self.what} with the kernel's flags (noatime, sync, ...) and the "
                "type's own options, each value of its own shape, none that names a device or a file")

    def problem(self, options: Sequence[str]) -> str | None:
        keys = Keys(self.keys)
        for option in options:
            for part in option.split(","):
                problem = keys.problem(part)
                if problem:
                    name = part.partition("=")[0]
                    if name not in {k.name for k in self.keys}:
                        return f"{part!r}: {name} is not a mount option pickfs accepts for {self.what}"
                    return f"{part!r}: {problem}"
        return None


# --- the conservative rules, for a type with no grammar of its own ------------------------------------------------
PLAIN = re.compile(r"[A-Za-z0-9_.,:=+^%@-]+")
# a device named by its tag rather than its path: mount(8), mkfs tools and blkid resolve these
TAG = re.compile(r"(?i)(?:^|[,=])(?:uuid|label|partuuid|partlabel|id)=")
# kernel names of block devices (loop3, sdb1, vda, nvme0n1p2, dm-0, md127, mmcblk0p1, ...): a tool may look them up
DEVICE_NAME = re.compile(r"(?:loop|nbd|md|dm-|zram|ram|pmem|sr|rbd|ublkb?)[0-9]+(?:p[0-9]+)?|"
                         r"(?:[shv]d|xvd)[a-z]+[0-9]*|nvme[0-9]+n[0-9]+(?:p[0-9]+)?|mmcblk[0-9]+(?:p[0-9]+)?")
# mount options that name a device or a path, and those mount(8) itself acts on (loop devices, helpers, x-*)
NAMES_A_PATH = frozenset({"device", "dev", "logdev", "rtdev", "journal_dev", "journal_path", "loop", "offset",
                          "sizelimit", "helper", "uhelper", "source", "subvol", "usrjquota", "grpjquota",
                          "prjjquota", "upperdir", "lowerdir", "workdir", "datadir", "metacopy"})


def plain_problem(text: str) -> str | None:
    """Why a piece of a conservative option names (or may name) a device or a file; None if it cannot (pure)."""
    if not PLAIN.fullmatch(text):
        return f"{text!r} holds a character other than letters, digits and _ . , : = + ^ % @ - (a '/' names a path)"
    if TAG.search(text):
        return f"{text!r} names a device by UUID=, LABEL=, PARTUUID= or PARTLABEL="
    for piece in re.split(r"[,=:]", text):
        if piece in (".", ".."):
            return f"{text!r} names a directory ({piece})"
        if DEVICE_NAME.fullmatch(piece):
            return f"{text!r} is a device's name" if piece == text else f"{text!r} names the device {piece}"
    return None


@dataclass(frozen=True)
class ConservativeMkfs:
    """mkfs options of a type with no grammar of its own: each a flag of plain characters, and any
    value in the argument right after a lone flag (`-O extra_attr`); nothing that names a device or a
    file, nothing that stands alone."""

    @property
    def hint(self) -> str:
        return ("drop or change it: for this type pickfs takes mkfs flags and values of letters, digits and "
                "_ . , : = + ^ % @ - only (no '/', UUID=/LABEL= form or device name), each value right after its flag")

    def problem(self, options: Sequence[str]) -> str | None:
        after_flag = False
        for token in options:
            # the token, and a value attached to a short flag (-cloop3): a tool reads that as the value alone
            attached = token[2:] if token.startswith("-") and not token.startswith("--") and len(token) > 2 else ""
            problem = plain_problem(token) or (plain_problem(attached) if attached else None)
            if problem:
                return problem
            if token in ("-", "--"):
                return f"{token!r} ends the options or stands for standard input: pickfs names the one device"
            if token.startswith("-"):
                after_flag = "=" not in token and (token.startswith("--") or len(token) == 2)
                continue
            if not after_flag:
                return f"{token!r} stands alone (a device or a file, to mkfs): pickfs names the one device mkfs formats"
            after_flag = False
        return None


@dataclass(frozen=True)
class ConservativeMount:
    """Mount options of a type with no grammar of its own: `name` or `name=value` of plain characters,
    none of those that name a device or a path (device=, logdev=, journal_path=, loop=, x-...)."""

    @property
    def hint(self) -> str:
        return ("drop or change it: for this type pickfs takes mount options name or name=value of letters, digits "
                "and _ . : + ^ % @ - only (no '/', UUID=/LABEL= form or device name), none naming a device or a path "
                "(device=, logdev=, journal_path=, loop=, x-...)")

    def problem(self, options: Sequence[str]) -> str | None:
        for option in options:
            for part in option.split(","):
                name = part.partition("=")[0]
                if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
                    return f"{part!r} is not a mount option of the form name or name=value"
                if name.lower() in NAMES_A_PATH or name.lower().startswith("x-"):
                    return f"{part!r}: {name} names a device or a path, or asks mount itself to act"
                problem = plain_problem(part)
                if problem:
                    return problem
        return None


CONSERVATIVE_MKFS = ConservativeMkfs()
CONSERVATIVE_MOUNT = ConservativeMount()


# --- the grammars of the types pickfs knows --------------------------------------------------------------------------
def _keys(*names: str, value: ValueRule | None = None, bare: bool = False) -> tuple[Key, ...]:
    return tuple(Key(n, value, bare) for n in names)


# what a filesystem does on an error it finds: never panic the machine pickfs runs on
ERRORS = replace(one_of("continue", "remount-ro"),
                 why="panic would stop the machine pickfs runs on at the filesystem's first error")
# mke2fs (ext2, ext3, ext4). Left out: -d (a host directory copied in), -l (a bad-blocks file), -z (an undo file
# written on the host), -J device= and -O journal_dev (external journals), -U (a chosen UUID), -e panic, -M, -S, -n,
# -c, -t.
EXT_FEATURES = Features(("64bit", "bigalloc", "casefold", "dir_index", "dir_nlink", "ea_inode", "encrypt", "ext_attr",
                         "extent", "extents", "extra_isize", "fast_commit", "filetype", "flex_bg", "has_journal",
                         "huge_file", "inline_data", "large_dir", "large_file", "meta_bg", "metadata_csum",
                         "metadata_csum_seed", "mmp", "orphan_file", "project", "quota", "resize_inode",
                         "sparse_super", "sparse_super2", "stable_inodes", "uninit_bg", "verity", "none"))
QUOTA_TYPES = Shape("quota types such as usrquota:grpquota",
                    r"(?:usrquota|grpquota|prjquota)(?::(?:usrquota|grpquota|prjquota))*", "usrquota:grpquota")
MKE2FS = MkfsGrammar("mke2fs", (
    Flag("b", value=SIZE), Flag("C", value=SIZE), Flag("D"), Flag("e", value=ERRORS),
    Flag("E", value=Keys((
        *_keys("mmp_update_interval", "stride", "stripe_width", "stripe-width", "offset", "resize", value=NUMBER),
        *_keys("lazy_itable_init", "lazy_journal_init", "assume_storage_prezeroed", "packed_meta_blocks",
               value=SWITCH, bare=True),
        *_keys("no_copy_xattrs", "test_fs", "discard", "nodiscard"),
        Key("num_backup_sb", one_of("0", "1", "2")), Key("orphan_file_size", SIZE),
        Key("root_owner", Shape("uid:gid", r"[0-9]+:[0-9]+", "0:0"), bare=True), Key("quotatype", QUOTA_TYPES),
        Key("encoding", Shape("an encoding such as utf8", r"utf8(?:-[0-9.]+)?", "utf8")),
        Key("encoding_flags", one_of("strict"))))),
    Flag("F"), Flag("g", value=NUMBER), Flag("G", value=NUMBER), Flag("i", value=SIZE), Flag("I", value=NUMBER),
    Flag("j"), Flag("J", value=Keys((Key("size", NUMBER), Key("fast_commit_size", NUMBER), Key("location", SIZE)))),
    Flag("L", value=LABEL), Flag("m", value=PERCENT), Flag("N", value=NUMBER), Flag("O", value=EXT_FEATURES),
    Flag("q"), Flag("r", value=SWITCH),
    Flag("T", value=Shape("usage types such as largefile or small,news", r"[a-z0-9_]+(?:,[a-z0-9_]+)*", "news")),
))

# mkfs.xfs. Left out: -l logdev=/file/name, -r (a realtime device), -d file/name, -p (a prototype file of host paths),
# -c (a config file), -m uuid=, -N, -C, -V.
MKFS_XFS = MkfsGrammar("mkfs.xfs", (
    Flag("b", value=Keys((Key("size", SIZE), Key("log", NUMBER)))),
    Flag("d", value=Keys((*_keys("agcount", "sunit", "swidth", "sw", "cowextsize", "extszinherit", value=NUMBER),
                          *_keys("agsize", "size", "su", value=SIZE), Key("noalign", SWITCH, bare=True),
                          Key("projinherit", NUMBER)))),
    Flag("f"),
    Flag("i", value=Keys((Key("size", SIZE), Key("log", NUMBER), Key("perblock", NUMBER), Key("maxpct", NUMBER),
                          *_keys("align", "projid32bit", "sparse", "nrext64", value=SWITCH, bare=True),
                          Key("attr", one_of("1", "2"))))),
    Flag("K"), Flag("L", value=LABEL),
    Flag("l", value=Keys((Key("internal", SWITCH, bare=True), Key("size", SIZE), Key("agnum", NUMBER),
                          Key("version", one_of("1", "2")), Key("sunit", NUMBER), Key("su", SIZE),
                          Key("lazy-count", SWITCH)))),
    Flag("m", value=Keys(_keys("crc", "finobt", "rmapbt", "reflink", "inobtcount", "bigtime", value=SWITCH))),
    Flag("n", value=Keys((Key("size", SIZE), Key("log", NUMBER), Key("version", one_of("2", "ci")),
                          Key("ftype", SWITCH)))),
    Flag("q"), Flag("s", value=Keys((Key("size", SIZE), Key("log", NUMBER)))),
))

# mkfs.btrfs. Left out: devices beside the one pickfs names (positional), -r/--rootdir, --shrink, -U/--uuid,
# --device-uuid, -A/--alloc-start, -V, -v.
BTRFS_PROFILE = one_of("single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid5", "raid6", "raid10")
MKFS_BTRFS = MkfsGrammar("mkfs.btrfs", (
    Flag("b", "byte-count", SIZE), Flag("", "csum", one_of("crc32c", "xxhash", "sha256", "blake2")),
    Flag("", "checksum", one_of("crc32c", "xxhash", "sha256", "blake2")),
    Flag("d", "data", BTRFS_PROFILE), Flag("m", "metadata", BTRFS_PROFILE), Flag("M", "mixed"),
    Flag("L", "label", LABEL), Flag("n", "nodesize", SIZE), Flag("s", "sectorsize", SIZE),
    Flag("O", "features", Features(("mixed-bg", "extref", "raid56", "skinny-metadata", "no-holes", "zoned", "quota",
                                    "free-space-tree", "block-group-tree", "raid-stripe-tree", "squota"))),
    Flag("R", "runtime-features", Features(("quota", "free-space-tree"))),
    Flag("K", "nodiscard"), Flag("f", "force"), Flag("q", "quiet"),
))

# the kernel's own mount flags, for every type (mount(8)'s own options, loop=, offset=, x-..., are not among them)
VFS: tuple[Key, ...] = _keys("defaults", "rw", "ro", "sync", "async", "dirsync", "atime", "noatime", "diratime",
                             "nodiratime", "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime",
                             "nolazytime", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "iversion",
                             "noiversion")
DAX = one_of("always", "never", "inode")
# ext2/ext3/ext4 (the ext4 driver). Left out: journal_dev=, journal_path= (external journals), usrjquota=,
# grpjquota= (quota files), errors=panic, abort, debug, test_dummy_encryption.
EXT_MOUNT = MountGrammar("ext2/ext3/ext4", (*VFS, *_keys(
    "journal_checksum", "nojournal_checksum", "journal_async_commit", "norecovery", "noload", "nobarrier",
    "delalloc", "nodelalloc", "noauto_da_alloc", "noinit_itable", "discard", "nodiscard", "nouid32", "block_validity",
    "noblock_validity", "dioread_lock", "dioread_nolock", "i_version", "grpid", "bsdgroups", "nogrpid", "sysvgroups",
    "user_xattr", "nouser_xattr", "acl", "noacl", "orlov", "oldalloc", "bsddf", "minixdf", "quota", "noquota",
    "usrquota", "grpquota", "prjquota", "nombcache", "no_mbcache", "prefetch_block_bitmaps",
    "no_prefetch_block_bitmaps"), *_keys(
    "journal_ioprio", "commit", "inode_readahead_blks", "stripe", "max_batch_time", "min_batch_time", "resgid",
    "resuid", "sb", value=NUMBER),
    Key("data", one_of("journal", "ordered", "writeback")), Key("data_err", one_of("ignore", "abort")),
    Key("barrier", SWITCH, bare=True), Key("auto_da_alloc", SWITCH, bare=True), Key("init_itable", NUMBER, bare=True),
    Key("dax", DAX, bare=True), Key("errors", ERRORS), Key("mb_optimize_scan", SWITCH)))
# xfs. Left out: logdev=, rtdev= (external log and realtime devices).
XFS_MOUNT = MountGrammar("xfs", (*VFS, *_keys(
    "attr2", "noattr2", "discard", "nodiscard", "grpid", "bsdgroups", "nogrpid", "sysvgroups", "filestreams", "ikeep",
    "noikeep", "inode32", "inode64", "largeio", "nolargeio", "noalign", "norecovery", "nouuid", "noquota", "uquota",
    "usrquota", "uqnoenforce", "quota", "qnoenforce", "pquota", "prjquota", "pqnoenforce", "gquota", "grpquota",
    "gqnoenforce", "swalloc", "wsync", "barrier", "nobarrier"), *_keys("logbufs", "sunit", "swidth", value=NUMBER),
    Key("allocsize", SIZE), Key("logbsize", SIZE), Key("dax", DAX, bare=True)))
# btrfs. Left out: device= (a device joined to the filesystem), subvol= (a path), degraded, rescue=, usebackuproot,
# fatal_errors= (bug and panic stop the machine).
COMPRESSION = Shape("a compression such as lzo, zstd or zstd:3", r"(?:zlib|lzo|zstd|no|none)(?::-?[0-9]+)?", "zstd:3")
BTRFS_MOUNT = MountGrammar("btrfs", (*VFS, *_keys(
    "acl", "noacl", "autodefrag", "noautodefrag", "barrier", "nobarrier", "clear_cache", "datacow", "nodatacow",
    "datasum", "nodatasum", "nodiscard", "enospc_debug", "noenospc_debug", "flushoncommit", "noflushoncommit",
    "norecovery", "skip_balance", "nospace_cache", "ssd", "ssd_spread", "nossd", "nossd_spread", "treelog",
    "notreelog", "user_subvol_rm_allowed"), *_keys("commit", "metadata_ratio", "thread_pool", "subvolid",
                                                    value=NUMBER),
    Key("compress", COMPRESSION, bare=True), Key("compress-force", COMPRESSION, bare=True),
    Key("discard", one_of("sync", "async"), bare=True),
    Key("max_inline", SIZE), Key("space_cache", one_of("v1", "v2"), bare=True)))
# tmpfs (in memory, no device at all; pickfs gives its size= itself)
TMPFS_MOUNT = MountGrammar("tmpfs", (*VFS, *_keys("noswap", "inode32", "inode64", "quota", "usrquota", "grpquota"),
    Key("size", Shape("a size such as 4g or 50%", r"(?i)[0-9]+[kmgtpe%]?", "50%")), Key("nr_blocks", SIZE),
    Key("nr_inodes", SIZE), Key("mode", Shape("an octal mode such as 1777", r"[0-7]{3,4}", "1777")), Key("uid", NUMBER),
    Key("gid", NUMBER), Key("huge", one_of("never", "always", "within_size", "advise", "deny", "force")),
    Key("mpol", Shape("a memory policy such as interleave:0-1",
                      r"(?:default|prefer|bind|interleave|local)(?:=(?:static|relative))?(?::[0-9]+(?:-[0-9]+)?)?", "interleave:0-1"))))
