"""Filesystem types: how to make one, and whether this machine can."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])


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
    needs_device: bool = True


_EXT_STEADY = ("-E", "lazy_itable_init=0,lazy_journal_init=0")
_EXT_IMPLICIT = ("barrier", "barrier=1", "data=ordered", "delalloc", "journal_checksum=0", "user_xattr", "acl")

KNOWN: dict[str, FsType] = {
    "ext2": FsType("ext2", ("mkfs.ext2", "-F", "-q"), "e2fsprogs", "ext4", _EXT_STEADY, _EXT_IMPLICIT),
    "ext3": FsType("ext3", ("mkfs.ext3", "-F", "-q"), "e2fsprogs", "ext4", _EXT_STEADY, _EXT_IMPLICIT),
    "ext4": FsType("ext4", ("mkfs.ext4", "-F", "-q"), "e2fsprogs", "ext4", _EXT_STEADY, _EXT_IMPLICIT),
    "xfs": FsType("xfs", ("mkfs.xfs", "-f", "-q"), "xfsprogs", "xfs", (), ("barrier", "logbufs=8")),
    "btrfs": FsType("btrfs", ("mkfs.btrfs", "-f", "-q"), "btrfs-progs", "btrfs", (), ("barrier", "compress=no")),
    "jfs": FsType("jfs", ("mkfs.jfs", "-q"), "jfsutils", "jfs"),
    "f2fs": FsType("f2fs", ("mkfs.f2fs", "-f", "-q"), "f2fs-tools", "f2fs"),
    "reiserfs": FsType("reiserfs", ("mkfs.reiserfs", "-f", "-f", "-q"), "reiserfsprogs", "reiserfs"),
    "nilfs2": FsType("nilfs2", ("mkfs.nilfs2", "-f", "-q"), "nilfs-tools", "nilfs2"),
    "bcachefs": FsType("bcachefs", ("mkfs.bcachefs", "-f", "-q"), "bcachefs-tools", "bcachefs"),
    "tmpfs": FsType("tmpfs", (), "", "tmpfs", needs_device=False),
}


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


# The block device itself, no filesystem: the baseline that fio workloads score against (= 100).
RAW = "raw"


def fs_type(name: str) -> FsType:
    """A known type, or a generic one for any other name the user gives (mkfs.<name>)."""
    return KNOWN.get(name) or FsType(name, (f"mkfs.{name}",), f"the package providing mkfs.{name}", name)


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
    if name == RAW:
        return None
    ft = fs_type(name)
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
