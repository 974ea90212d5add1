"""Guards before pickfs formats a device the user named."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from pickfs.errors import UnsafeTarget
from pickfs.stack.filesystems import which
from pickfs.stack.mountinfo import parse_mountinfo


def _majmin(path: str) -> str:
    st = os.stat(path)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _family(name: str) -> list[str]:
    """The device and its partitions (kernel names)."""
    base = Path(f"/sys/class/block/{name}")
    return [name] + sorted(p.name for p in base.iterdir() if (p / "partition").exists()) if base.is_dir() else [name]


def _majmin_of_name(name: str) -> str | None:
    try:
        return Path(f"/sys/class/block/{name}/dev").read_text().strip()
    except OSError:
        return None


def _root_devices() -> set[str]:
    """major:minor of the device under / (and of its whole disk)."""
    st = os.stat("/")
    out = {f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"}
    for e in parse_mountinfo(Path("/proc/self/mountinfo").read_text()):
        if e.mountpoint == "/":
            out.add(e.major_minor)
    return out


def signatures(device: str) -> list[str]:
    """Filesystem, RAID or partition-table signatures found by blkid (probing, read-only)."""
    tool = which("blkid")
    if tool is None:
        return ["cannot probe: blkid missing (apt-get install util-linux)"]
    proc = subprocess.run([tool, "-p", "-o", "export", device], capture_output=True, text=True)
    if proc.returncode == 2:  # nothing found
        return []
    fields = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    if proc.returncode != 0 and not fields:
        return [f"cannot probe: {proc.stderr.strip() or 'blkid failed'}"]
    kind = fields.get("TYPE") or fields.get("PTTYPE") or "unknown"
    return [f"{kind} signature" + (f" (label {fields['LABEL']})" if fields.get("LABEL") else "")]


# where the system itself lives: a disk mounted on one of these is not "unmounted first", it is not a spare disk
SYSTEM_MOUNTS = ("/", "/boot", "/boot/efi", "/efi", "/usr", "/var", "/home", "/etc", "/opt", "/srv", "/root", "/nix")
SPARE_HINT = "name a spare disk that holds nothing you need, or build on image files (--target image, the default)"


def root_refusal(device: str) -> UnsafeTarget:
    """The refusal of the disk the system runs from (pure)."""
    return UnsafeTarget(f"{device} holds the root filesystem: pickfs never formats the disk the system runs from",
                        SPARE_HINT)


def mounted_refusal(device: str, mountpoints: list[str]) -> UnsafeTarget:
    """The refusal of a mounted device, with a fix that makes sense for where it is mounted (pure): the root
    filesystem or another of the system's own is never to be unmounted for pickfs; a spare disk someone mounted is."""
    if "/" in mountpoints:
        return root_refusal(device)
    system = [m for m in mountpoints if m in SYSTEM_MOUNTS]
    if system:
        return UnsafeTarget(f"{device} is mounted on {system[0]}, which the system uses: pickfs never formats it",
                            SPARE_HINT)
    return UnsafeTarget(f"{device} is mounted on {mountpoints[0]}",
                        f"unmount it first (umount {mountpoints[0]}) if it holds nothing you need, or name another "
                        "device")


def check_device(device: str, confirm: str | None) -> None:
    """Raise UnsafeTarget unless pickfs may format this device."""
    if not os.path.exists(device):
        raise UnsafeTarget(f"device {device} does not exist", "name a block device such as /dev/sdb")
    if not stat.S_ISBLK(os.stat(device).st_mode):
        raise UnsafeTarget(f"{device} is not a block device", "use --target image for a file-backed image")
    name = Path(os.path.realpath(device)).name
    family = _family(name)
    ids = {m for m in (_majmin_of_name(n) for n in family) if m}
    if ids & _root_devices():
        raise root_refusal(device)
    mounted = [e.mountpoint for e in parse_mountinfo(Path("/proc/self/mountinfo").read_text())
               if e.major_minor in ids]
    if mounted:
        raise mounted_refusal(device, mounted)
    swaps = Path("/proc/swaps").read_text().splitlines()[1:] if Path("/proc/swaps").exists() else []
    for line in swaps:
        swap_dev = line.split()[0]
        if os.path.exists(swap_dev) and Path(os.path.realpath(swap_dev)).name in family:
            raise UnsafeTarget(f"{device} is used as swap", f"swapoff {swap_dev} first, or pick a spare device")
    for n in family:
        holders = Path(f"/sys/class/block/{n}/holders")
        if holders.is_dir() and any(holders.iterdir()):
            users = ", ".join(p.name for p in holders.iterdir())
            raise UnsafeTarget(f"{device} is in use by {users}", "release it first, or pick a spare device")
    if confirm != device:
        found = signatures(device)
        for n in family[1:]:
            found.append(f"partition {n}")
        what = "; it carries " + ", ".join(found) if found else ""
        raise UnsafeTarget(f"pickfs will erase {device}{what}",
                           f"repeat the exact path to confirm: --confirm-device {device}")
