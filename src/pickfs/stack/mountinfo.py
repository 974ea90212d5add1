"""Reading /proc/self/mountinfo and comparing requested with effective options (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from pickfs.stack.filesystems import fs_type

# Options that are the VFS default and are never listed.
VFS_DEFAULTS = frozenset({"defaults", "rw", "async", "suid", "dev", "exec", "auto", "nouser"})
# Options the kernel lists under another spelling.
ALIASES = {"barrier=0": "nobarrier", "barrier=1": "barrier", "nobarrier": "nobarrier"}


@dataclass(frozen=True)
class MountEntry:
    mount_id: int
    major_minor: str
    mountpoint: str
    fstype: str
    source: str
    options: tuple[str, ...]  # per-mount options then superblock options, de-duplicated


def _unescape(text: str) -> str:
    return text.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def parse_mountinfo(text: str) -> list[MountEntry]:
    out = []
    for line in text.splitlines():
        if " - " not in line:
            continue
        left, right = line.split(" - ", 1)
        lf, rf = left.split(), right.split()
        if len(lf) < 6 or len(rf) < 2:
            continue
        opts: list[str] = []
        for o in lf[5].split(",") + (rf[2].split(",") if len(rf) > 2 else []):
            if o and o not in opts:
                opts.append(o)
        out.append(MountEntry(int(lf[0]), lf[2], _unescape(lf[4]), rf[0], _unescape(rf[1]), tuple(opts)))
    return out


def find_mount(entries: list[MountEntry], mountpoint: str) -> MountEntry | None:
    found = None
    for e in entries:
        if e.mountpoint == mountpoint:
            found = e  # the last one is on top
    return found


def mount_containing(entries: list[MountEntry], path: str) -> MountEntry | None:
    """The mount a path lives on: the longest mountpoint that contains it (the last one when stacked)."""
    best = None
    for e in entries:
        mp = e.mountpoint
        inside = path == mp or path.startswith(mp.rstrip("/") + "/")
        if inside and (best is None or len(mp) >= len(best.mountpoint)):
            best = e
    return best


def compare_options(requested: tuple[str, ...], effective: tuple[str, ...],
                    implicit: tuple[str, ...]) -> list[str]:
    """Notes for every requested option that is not visibly in force."""
    notes = []
    eff = set(effective)
    eff_keys = {o.split("=", 1)[0]: o for o in effective}
    for opt in requested:
        canon = ALIASES.get(opt, opt)
        if canon in eff or opt in eff:
            continue
        if opt in VFS_DEFAULTS or opt in implicit or canon in implicit:
            continue
        key = opt.split("=", 1)[0]
        if "=" in opt and key in eff_keys:
            notes.append(f"mount option {opt} not in force: the kernel uses {eff_keys[key]}")
        else:
            notes.append(f"mount option {opt} not in force: the kernel ignored it")
    return notes


_NEGATIONS = {"barrier": "nobarrier"}


def parse_ext4_options(text: str) -> tuple[str, ...]:
    """/proc/fs/ext4/<dev>/options: every option in force, one a line (defaults included)."""
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def effective_options(fstype: str, listed: tuple[str, ...], ext4_options: str = "") -> tuple[str, ...]:
    """The options really in force (pure): where the driver lists them all (ext2/3/4: `ext4_options`, from
    /proc/fs/ext4/<dev>/options: barrier, data mode, commit interval, delalloc...), its full list; else
    what mountinfo lists (xfs and btrfs print their effective values) plus the defaults the type never
    prints (`FsType.unlisted`)."""
    ft = fs_type(fstype)
    if ft.options_file and ext4_options.strip():
        out = list(parse_ext4_options(ext4_options))
        for o in listed:  # per-mount flags (relatime, nodev) are not in the driver's list
            if o not in out and o.split("=", 1)[0] not in {x.split("=", 1)[0] for x in out}:
                out.append(o)
        return tuple(out)
    out = list(listed)
    keys = {o.split("=", 1)[0] for o in out}
    for key, default in ft.unlisted:
        if key not in keys and _NEGATIONS.get(key) not in keys:
            out.append(default)
    return tuple(out)


def read_effective_options(fstype: str, listed: tuple[str, ...], device: str | None) -> tuple[str, ...]:
    """effective_options with the driver's list read, where it keeps one, for the filesystem on `device` (/dev/loop3)."""
    text = ""
    options_file = fs_type(fstype).options_file
    if device and options_file:
        name = device.rsplit("/", 1)[-1]
        try:
            with open(options_file.format(disk=name)) as f:
                text = f.read()
        except OSError:
            text = ""
    return effective_options(fstype, listed, text)
