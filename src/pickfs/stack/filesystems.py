"""Filesystem types: how to make one, whether this machine can, and what pickfs knows of each.

One `FsType` per type in `KNOWN` carries every fact the rest of pickfs asks about it: how it stands
(a filesystem made on a block device, one in memory, or the block device itself), its mkfs, how its
kernel driver names it, its read-only check (fsck) and how to read what that said, the tool that
counts its free space's fragments, its journal (thread and counters), the kernel threads that serve
it without naming the device, the grammar of its mkfs and mount options, whether it is a reference rather than a
candidate, and (`facts`, from pickfs.fsfacts, where the analysis reads them too) how it ranks as the distribution's
default or a legacy format, its fstab fsck pass, its journal and its search space. Code elsewhere asks the type
(`fs_type(name)`), never compares the name with a string.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pickfs.errors import PlanError
from pickfs.fsfacts import JBD2, XFS_LOG, FsFacts, Journal, facts_of, has_filesystem, in_memory, is_reference
from pickfs.fsfacts import RAW as RAW  # the raw configuration's name, for those who build it
from pickfs.model import FsConfig
from pickfs.stack.option_grammar import (
    BTRFS_MOUNT,
    CONSERVATIVE_MKFS,
    CONSERVATIVE_MOUNT,
    EXT_MOUNT,
    MKE2FS,
    MKFS_BTRFS,
    MKFS_XFS,
    TMPFS_MOUNT,
    XFS_MOUNT,
    OptionGrammar,
)

SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])


@dataclass(frozen=True)
class Fsck:
    """The filesystem's own read-only check: argv before the device, and how to read what it said."""

    argv: tuple[str, ...]
    banner: tuple[str, ...] = ()  # a first line starting with one of these is the tool's banner, not a finding

    def findings(self, output: str) -> str:
        """What the check said, one line, its banner left out (pure)."""
        lines = [x.strip() for x in output.splitlines() if x.strip()]
        if lines and self.banner and lines[0].startswith(self.banner):
            lines = lines[1:]
        return " | ".join(lines)[:300]


def parse_e2freefrag(text: str) -> int | None:
    """Free-space fragments from e2freefrag's report (pure)."""
    m = re.search(r"^Num\. free extent:\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def parse_xfs_freesp(text: str) -> int | None:
    """Free-space fragments from xfs_db's `freesp -s` (pure)."""
    m = re.search(r"^total free extents\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class FreeSpaceTool:
    """The filesystem's own tool that counts its free space's fragments (read-only)."""

    argv: tuple[str, ...]  # before the device (or, with `mounted`, the mount point)
    package: str
    parse: Callable[[str], int | None]  # its output -> free-space fragments
    mounted: bool = False  # asks the mounted filesystem (the mount point), not the device

    def command(self, device: str, mountpoint: Path) -> list[str]:
        return [*self.argv, str(mountpoint) if self.mounted else device]


@dataclass(frozen=True)
class FsType:
    name: str
    mkfs: tuple[str, ...]  # argv before user options and the device; () for no mkfs
    package: str  # Debian package with the mkfs tool
    module: str  # kernel module / CONFIG name root
    # mkfs options that leave nothing running after mount (so runs start in steady state)
    steady: tuple[str, ...] = ()
    # mount options in force by default that the kernel does not list in /proc/self/mountinfo
    implicit: tuple[str, ...] = ()
    driver: str = ""  # the name `mount -t` and /proc/filesystems know it by ("": its own name)
    shown_as: tuple[str, ...] = ()  # other names /proc/self/mountinfo may list it under (ext3: the ext4 driver's)
    fsck: Fsck | None = None  # None: fsck.<name> -n
    free_space: FreeSpaceTool | None = None  # None: no tool counts its free space's fragments
    journal: Journal | None = None  # None: no journal whose counters the monitors read
    # where the driver lists every option in force, defaults included ({disk}: loop3); "": mountinfo only
    options_file: str = ""
    # (option, its default) in force unless another value is listed, that mountinfo never prints
    unlisted: tuple[tuple[str, str], ...] = ()
    # kernel threads and workqueues that serve it without naming its device (btrfs-transaction,
    # kworker/u8:3-btrfs-endio-write): they count as every cell's of this type
    deviceless_threads: str = ""
    # the mkfs and mount options it accepts (stack/option_grammar.py): none that names a device or a file
    mkfs_grammar: OptionGrammar = CONSERVATIVE_MKFS
    mount_grammar: OptionGrammar = CONSERVATIVE_MOUNT
    # two copies of one filesystem (the same UUID) can be mounted at once, each as itself, with the
    # `clone_mount_options` added (xfs refuses the second unless mounted nouuid, which skips only that check;
    # btrfs takes them for devices of one filesystem): crash states can be checked side by side
    clones_mount_together: bool = False
    clone_mount_options: tuple[str, ...] = ()

    @property
    def kernel_name(self) -> str:
        """What `mount -t` and /proc/filesystems call it."""
        return self.driver or self.name

    @property
    def facts(self) -> FsFacts:
        """What the analysis, the search and the risks know of it (pickfs.fsfacts `FACTS`): the distribution's
        default, a legacy format, its fstab fsck pass, its journal, its search space."""
        return facts_of(self.name)

    @property
    def reference(self) -> bool:
        """An upper bound or yardstick (in memory, the raw device), not a candidate for the answer."""
        return is_reference(self.name)

    @property
    def in_memory(self) -> bool:
        """Mounted with no block device (tmpfs): kept in memory, lost on a power cut."""
        return in_memory(self.name)

    @property
    def needs_device(self) -> bool:
        """Stands on a block device (an image's loop device, or the target's device)."""
        return not self.in_memory

    @property
    def mounts(self) -> bool:
        """A filesystem that is mounted; False for the block device itself (raw)."""
        return has_filesystem(self.name)

    @property
    def on_block_device(self) -> bool:
        """A filesystem made on a block device: what a crash test cuts the power of, and fsck checks."""
        return self.needs_device and self.mounts

    def checker(self) -> Fsck:
        return self.fsck or Fsck((f"fsck.{self.name}", "-n"))

    def mounted_as(self, shown: str) -> bool:
        """Does /proc/self/mountinfo's fstype name this type?"""
        return shown in (self.name, self.kernel_name, *self.shown_as)

    def serves_unnamed(self, comm: str) -> bool:
        """Is this kernel thread one of the type's own that names no device (pure)?"""
        p = self.deviceless_threads
        return bool(p) and (comm.startswith(p) or re.search(rf"^kworker/.*[-+]{re.escape(p)}", comm) is not None)


_EXT_STEADY = ("-E", "lazy_itable_init=0,lazy_journal_init=0")
_EXT_IMPLICIT = ("barrier", "barrier=1", "data=ordered", "delalloc", "journal_checksum=0", "user_xattr", "acl")
EXT4_OPTIONS = "/proc/fs/ext4/{disk}/options"  # the ext4 driver's (it serves ext2 and ext3 too)
E2FSCK = Fsck(("e2fsck", "-fn"), banner=("e2fsck 1.",))
E2FREEFRAG = FreeSpaceTool(("e2freefrag",), "e2fsprogs", parse_e2freefrag)
# xfs_spaceman asks the mounted filesystem (GETFSMAP): its AG headers on disk lag behind the log
XFS_FREESP = FreeSpaceTool(("xfs_spaceman", "-c", "freesp -s"), "xfsprogs", parse_xfs_freesp, mounted=True)


def _ext(name: str, journal: Journal | None = None, shown_as: tuple[str, ...] = ()) -> FsType:
    return FsType(name, (f"mkfs.{name}", "-F", "-q"), "e2fsprogs", "ext4", _EXT_STEADY, _EXT_IMPLICIT, fsck=E2FSCK,
                  free_space=E2FREEFRAG, journal=journal, shown_as=shown_as, options_file=EXT4_OPTIONS,
                  mkfs_grammar=MKE2FS, mount_grammar=EXT_MOUNT, clones_mount_together=True)


_KNOWN: tuple[FsType, ...] = (
    _ext("ext2"),
    _ext("ext3", JBD2, shown_as=("ext4",)),  # served by the ext4 driver on current kernels
    _ext("ext4", JBD2),
    # xfs always issues cache flushes (nobarrier was removed in Linux 4.19); btrfs unless mounted nobarrier,
    # and commits every 30 s unless commit= says otherwise: neither lists that in mountinfo
    FsType("xfs", ("mkfs.xfs", "-f", "-q"), "xfsprogs", "xfs", implicit=("barrier", "logbufs=8"),
           fsck=Fsck(("xfs_repair", "-n"), banner=("Phase 1",)), free_space=XFS_FREESP, journal=XFS_LOG,
           unlisted=(("barrier", "barrier"),), mkfs_grammar=MKFS_XFS, mount_grammar=XFS_MOUNT,
           clones_mount_together=True, clone_mount_options=("nouuid",)),
    FsType("btrfs", ("mkfs.btrfs", "-f", "-q"), "btrfs-progs", "btrfs", implicit=("barrier", "compress=no"),
           fsck=Fsck(("btrfs", "check", "--readonly")), unlisted=(("barrier", "barrier"), ("commit", "commit=30")),
           deviceless_threads="btrfs-", mkfs_grammar=MKFS_BTRFS, mount_grammar=BTRFS_MOUNT),
    FsType("jfs", ("mkfs.jfs", "-q"), "jfsutils", "jfs"),
    FsType("f2fs", ("mkfs.f2fs", "-f", "-q"), "f2fs-tools", "f2fs"),
    FsType("reiserfs", ("mkfs.reiserfs", "-f", "-f", "-q"), "reiserfsprogs", "reiserfs"),
    FsType("nilfs2", ("mkfs.nilfs2", "-f", "-q"), "nilfs-tools", "nilfs2"),
    FsType("bcachefs", ("mkfs.bcachefs", "-f", "-q"), "bcachefs-tools", "bcachefs"),
    # The references (pickfs.fsfacts): in memory, and the block device itself (the baseline fio scores against).
    FsType("tmpfs", (), "", "tmpfs", mount_grammar=TMPFS_MOUNT),
    FsType(RAW, (), "", ""),
)
KNOWN: dict[str, FsType] = {ft.name: ft for ft in _KNOWN}


# Where today's kernel defaults differ from what older kernels did, so a published figure measured
# then is not what a preset measures now (keyed by filesystem; the note applies while the option
# named is in force).
LEGACY_DEFAULTS: dict[str, tuple[str, str]] = {
    "ext3": ("barrier", ("ext3 here is mounted by the ext4 driver with barriers on (barrier=1); kernels before "
                         "2.6.38 (the 2009-2010 field reports R1, R2) mounted ext3 with barriers off by default, "
                         "fast and unsafe on power loss: mount with barrier=0 to measure what they measured")),
}


def legacy_default_notes(fstype: str, effective: tuple[str, ...]) -> list[str]:
    """Notes for defaults in force that older kernels did not have (pure)."""
    entry = LEGACY_DEFAULTS.get(fstype)
    if entry is None or entry[0] not in effective:
        return []
    return [entry[1]]


def fs_type(name: str) -> FsType:
    """A known type, or a generic one for any other name the user gives (mkfs.<name>)."""
    return KNOWN.get(name) or FsType(name, (f"mkfs.{name}",), f"the package providing mkfs.{name}", name)


def mounted_type(kernel_name: str) -> FsType:
    """The type `mount -t` knows by this name: a known type's driver name, or the type of that name."""
    return next((ft for ft in _KNOWN if ft.kernel_name == kernel_name), None) or fs_type(kernel_name)


def check_options(config: FsConfig) -> None:
    """PlanError, in one line naming the fix, unless every mkfs and mount option of the configuration is one its
    type accepts (stack/option_grammar.py): none may name a device or a file (pure)."""
    ft = fs_type(config.fstype)
    for what, grammar, options in (("mkfs", ft.mkfs_grammar, config.mkfs_options),
                                   ("mount", ft.mount_grammar, config.mount_options)):
        problem = grammar.problem(options)
        if problem:
            raise PlanError(f"{config.name}: {what} option {problem[:300]}", grammar.hint)


def which(tool: str) -> str | None:
    return shutil.which(tool, path=SBIN_PATH)


def kernel_has(name: str, proc_filesystems: str) -> bool:
    """Pure: does /proc/filesystems text list this filesystem?"""
    for line in proc_filesystems.splitlines():
        parts = line.split()
        if parts and parts[-1] == name:
            return True
    return False


def _kernel_text() -> str:
    try:
        return Path("/proc/filesystems").read_text()
    except OSError:
        return ""


def module_available(module: str, release: str, modules_dir: Path = Path("/lib/modules")) -> bool:
    """Is there a loadable module of that name for this kernel (modules.dep lists every module)?"""
    try:
        dep = (modules_dir / release / "modules.dep").read_text()
    except OSError:
        return False
    return any(line.split(":", 1)[0].rsplit("/", 1)[-1].split(".ko", 1)[0] == module for line in dep.splitlines())


def kernel_reason(name: str, module: str, release: str, has_modules_dir: bool, module_found: bool) -> str:
    """What is missing when the kernel has no such filesystem (pure)."""
    if not has_modules_dir:
        return (f"kernel {release} has no {name} filesystem: not built in (/proc/filesystems does not list it) "
                f"and there are no loadable modules for this kernel (/lib/modules/{release} is absent); "
                f"use a kernel built with {name} support")
    if not module_found:
        return (f"kernel {release} has no {name} filesystem: not built in, and no module '{module}' in "
                f"/lib/modules/{release} (install the distribution's extra modules package, or a kernel with "
                f"{name} support)")
    return f"kernel {release} has the module '{module}' but it would not load (check dmesg, or modprobe {module})"


def unavailable_reason(name: str) -> str | None:
    """None when this machine can build the filesystem; else a reason naming what is missing and the
    fix. The kernel's support is checked first (/proc/filesystems, then its modules): installing a
    mkfs tool does not help a kernel that cannot mount the result."""
    ft = fs_type(name)
    if not ft.mounts:  # the block device itself: nothing to build
        return None
    name = ft.kernel_name
    if not kernel_has(name, _kernel_text()):
        # The module may simply not be loaded yet.
        release = os.uname().release
        found = module_available(ft.module, release)
        if found and os.geteuid() == 0 and which("modprobe"):
            subprocess.run([which("modprobe") or "modprobe", "-q", ft.module], capture_output=True)
        if not kernel_has(name, _kernel_text()):
            reason = kernel_reason(name, ft.module, release, Path(f"/lib/modules/{release}").is_dir(), found)
            if ft.mkfs and which(ft.mkfs[0]) is None:
                reason += f"; {ft.mkfs[0]} is not installed either (apt-get install {ft.package})"
            return reason
    if ft.mkfs and which(ft.mkfs[0]) is None:
        return f"{ft.mkfs[0]} is not installed (apt-get install {ft.package}); the kernel supports {name}"
    return None
