"""Build one configuration for real: image or device, mkfs, mount, scheduler; read it back."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from pickfs.errors import CommandFailed, ConfigUnavailable, NoRoom, PlanError
from pickfs.model import FsConfig, MountInfo, Target
from pickfs.proc import run
from pickfs.safepaths import resolve
from pickfs.stack import blockdev
from pickfs.stack.aging import AgingResult, age
from pickfs.stack.cleanup import DIR, IMAGE, LOOP, MOUNT, SCHEDULER
from pickfs.stack.filesystems import check_options, fs_type, legacy_default_notes, mounted_type
from pickfs.stack.ledger import Ledger
from pickfs.stack.mountinfo import (
    compare_options,
    find_mount,
    mount_containing,
    parse_mountinfo,
    read_effective_options,
)
from pickfs.stack.quiesce import wait_idle
from pickfs.stack.resources import held
from pickfs.stack.safety import check_device
from pickfs.stack.targets import target_kind
from pickfs.stack.workdir import PRIVATE_MODE, WORKDIR_MODE, private_dir

# Room the host filesystem keeps beyond the images, for results, logs and the workloads' caches.
HOST_RESERVE_BYTES = 256 * 1024**2


@dataclass(frozen=True)
class Provisioned:
    info: MountInfo
    datadir: Path  # where the workload keeps its files; for the raw configuration, the block device itself
    disk: str | None  # kernel name of the block device to watch (loop3, sdb), if any
    aging: AgingResult | None = None  # the configuration was aged before its data was laid out


def space_used(path: str) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def room_problem(avail_bytes: int, image_bytes: int, growing_bytes: int) -> str | None:
    """Why the host filesystem cannot take a new image (pure); None when it can.

    The rule: a workload may fill the filesystem under test, so a sparse image may grow to its
    whole size (a share of 1.0, not an estimate of the workload). The host must have free, as
    statvfs counts it for users (f_bavail), the new image's size, plus what the images already
    in the work directory may still grow (their size less what is already written), plus
    HOST_RESERVE_BYTES. Otherwise the host fills up mid-run and the filesystem under test sees
    write errors (ext4 aborts its journal) instead of this one clear refusal before mkfs.
    """
    needed = image_bytes + growing_bytes + HOST_RESERVE_BYTES
    if avail_bytes >= needed:
        return None
    mib = 1024**2
    others = f" + {growing_bytes // mib} MiB the other images may still grow" if growing_bytes else ""
    return (f"the host filesystem has {avail_bytes // mib} MiB free but an image of {image_bytes // mib} MiB"
            f"{others} + {HOST_RESERVE_BYTES // mib} MiB reserve needs {needed // mib} MiB")


def growing_bytes(images: Path, expected: dict[str, int] | None = None) -> int:
    """What the sparse images in `images` may still grow by: what each may come to (its size, or
    the growth recorded for it in `expected` by path) less the blocks already allocated."""
    expected = expected or {}
    total = 0
    for path in images.glob("*.img"):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            limit = min(st.st_size, expected.get(str(path), st.st_size))
            total += max(0, limit - st.st_blocks * 512)
    return total


def check_room(images: Path, image_bytes: int, expected: dict[str, int] | None = None) -> None:
    """NoRoom, naming the fix, when the host filesystem under `images` cannot hold one more image
    that may grow to `image_bytes`."""
    st = os.statvfs(images)
    problem = room_problem(st.f_bavail * st.f_frsize, image_bytes, growing_bytes(images, expected))
    if problem:
        raise NoRoom(problem, "pass a smaller --size, free space on the host, or choose a --workdir elsewhere")


def new_image(ledger: Ledger, stack: ExitStack, workdir: Path, size: int, expect: int | None = None) -> Path:
    """A sparse image file of `size` bytes (0600, ledger-tracked), after checking the host has room.

    expect: how far the image is expected to grow (filesystem metadata plus the workload's data,
    when known); the room check counts that instead of the whole size, for this image and for
    the others standing (side by side, dozens of images stand at once), from their ledger entries.
    """
    images = private_dir(workdir / "images", PRIVATE_MODE)
    grows = min(size, expect) if expect else size
    recorded = {e.get("path"): int(e.get("expect")) for e in ledger.entries()
                if e.kind == IMAGE.name and e.get("expect")}
    check_room(images, grows, recorded)
    image = images / f"{uuid.uuid4().hex[:12]}.img"
    stack.enter_context(held(ledger, IMAGE, path=str(image), expect=grows))
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
    return image


def mkfs_command(config: FsConfig, device: str) -> list[str]:
    """The argv that makes the configuration's filesystem on `device` (pure): its type's mkfs, the options that
    leave nothing running after mount, then the configuration's own."""
    ft = fs_type(config.fstype)
    return [*ft.mkfs, *ft.steady, *config.mkfs_options, device]


def _kernel_log_tail(lines: int = 3) -> str:
    try:
        out = run(["dmesg", "--notime"], timeout=10).text.splitlines()
    except Exception:
        return ""
    return " | ".join(out[-lines:])


def mount(ledger: Ledger, stack: ExitStack, source: str, mountpoint: Path, fstype: str,
          options: tuple[str, ...]) -> None:
    """Mount `source` on the empty `mountpoint` pickfs just made (ledger-tracked). The options are checked against
    the type's grammar again right here (none may name a device or a file), and mount runs from inside the empty
    mount point, so a bare relative name in an option reaches nothing."""
    _check_mount_options(fstype, options)
    stack.enter_context(held(ledger, MOUNT, mountpoint=str(mountpoint)))
    mount_held(source, mountpoint, fstype, options)


def mount_held(source: str, mountpoint: Path, fstype: str, options: tuple[str, ...]) -> None:
    """Mount `source` on the empty `mountpoint` pickfs made, whose ledger entry the caller holds already (one entry
    for mounts one after another on the same mount point, each unmounted before the next), as `mount` does."""
    _check_mount_options(fstype, options)
    argv = ["mount", "-t", fstype]
    if options:
        argv += ["-o", ",".join(options)]
    try:
        run([*argv, source, str(mountpoint)], package="util-linux", cwd=str(mountpoint))
    except CommandFailed as exc:
        raise ConfigUnavailable(
            f"mount -t {fstype} -o {','.join(options) or 'defaults'} refused: {_kernel_log_tail(2) or exc.one_line()}",
            "drop or change the refused option in this configuration",
        ) from None


def _check_mount_options(fstype: str, options: tuple[str, ...]) -> None:
    grammar = mounted_type(fstype).mount_grammar
    problem = grammar.problem(options)
    if problem:
        raise PlanError(f"mount option {problem[:300]}", grammar.hint)


@contextmanager
def attached(image: Path, ledger: Ledger) -> Iterator[str]:
    """A loop device on an image file (ledger-tracked), detached on exit."""
    with held(ledger, LOOP, image=str(image)) as box:
        device = blockdev.attach_loop(image)
        box[0] = ledger.update(box[0], device=device)
        yield device


def _mountdir(ledger: Ledger, stack: ExitStack, workdir: Path) -> Path:
    """A fresh 0700 mount point; its parent lets database servers' users pass through (0711)."""
    parent = private_dir(workdir / "mnt", WORKDIR_MODE)
    mountpoint = parent / uuid.uuid4().hex[:12]
    stack.enter_context(held(ledger, DIR, path=str(mountpoint)))
    mountpoint.mkdir(mode=PRIVATE_MODE)
    return mountpoint


def _read_back(config: FsConfig, mountpoint: Path, device: str | None, scheduler: str | None) -> MountInfo:
    entry = find_mount(parse_mountinfo(Path("/proc/self/mountinfo").read_text()), str(mountpoint))
    # the options really in force (ext's driver list, xfs/btrfs unlisted defaults), legacy-default notes
    effective = read_effective_options(entry.fstype, entry.options, device) if entry else ()
    ft = fs_type(config.fstype)
    notes = compare_options(config.mount_options, effective, ft.implicit)
    notes += legacy_default_notes(config.fstype, effective)
    if entry and not ft.mounted_as(entry.fstype):
        notes.append(f"mounted as {entry.fstype}, not {config.fstype}")
    if device and blockdev.is_loop(device) and blockdev.loop_direct_io(device) is False:
        notes.append("loop device uses buffered I/O (direct I/O was refused by the image's filesystem)")
    if device and blockdev.discard_disabled(device):
        notes.append(f"discard is turned off on {Path(device).name} (queue/discard_max_bytes is 0): "
                     "filesystems will not discard, unlike on the real device")
    return MountInfo(
        device=device,
        mountpoint=str(mountpoint),
        fstype=entry.fstype if entry else config.fstype,
        requested_options=config.mount_options,
        effective_options=effective,
        scheduler_requested=config.scheduler,
        scheduler_effective=scheduler,
        space_used_bytes=space_used(str(mountpoint)),
        notes=tuple(notes),
    )


@contextmanager
def provision(config: FsConfig, target: Target, ledger: Ledger, quiet_s: float = 1.0,
              quiesce_timeout: float = 60.0, image: Path | None = None,
              expect_bytes: int | None = None) -> Iterator[Provisioned]:
    """A fresh filesystem for `config`, mounted and idle; everything undone on exit.

    `image`: an image file that already exists (the crash recorder's) to build on, instead of a new one.
    `expect_bytes`: how far a new image is expected to grow (see new_image); None: its whole size.
    """
    workdir = Path(target.workdir)
    kind, ft = target_kind(target), fs_type(config.fstype)
    with ExitStack() as stack:
        if not kind.builds:
            yield _in_directory(config, ledger, stack)
            return
        mountpoint = _mountdir(ledger, stack, workdir) if ft.mounts else None
        if not ft.needs_device:  # in memory: mounted with no block device, as large as an image would be
            assert mountpoint is not None
            mount(ledger, stack, f"pickfs-{ft.name}", mountpoint, ft.kernel_name,
                  (f"size={target.size_bytes}", *config.mount_options))
            info = _read_back(config, mountpoint, None, None)
            yield Provisioned(info, _datadir(mountpoint), None)
            return

        if kind.images:
            if image is None:
                image = new_image(ledger, stack, workdir, target.size_bytes, expect_bytes)
            device = stack.enter_context(attached(image, ledger))
        else:
            device = target.device or ""
        # Loop devices keep whatever scheduler was last set on them: always set one, so a
        # configuration that names none gets the kernel's default for loop devices.
        wanted = config.scheduler or ("none" if blockdev.is_loop(device) else None)
        scheduler = blockdev.get_scheduler(device)
        if wanted and wanted != scheduler:
            stack.enter_context(held(ledger, SCHEDULER, device=device, original=scheduler))
            scheduler = blockdev.set_scheduler(device, wanted)
        disk = blockdev.disk_name(device)
        # say which queue the scheduler setting changes (on an image, not the host disk's)
        host = blockdev.disk_holding(image) if image is not None else None
        sched_note = blockdev.scheduler_note(device, config.scheduler, scheduler, host,
                                             blockdev.get_scheduler(f"/dev/{host}") if host else None)
        if not ft.mounts:  # the block device itself
            if kind.erases:  # checked again right before writing: nothing may have mounted it since
                check_device(device, target.confirm)
            info = MountInfo(device, "", ft.name, (), (), config.scheduler, scheduler, None,
                             (sched_note,) if config.scheduler else ())
            wait_idle(disk, quiet_s, quiesce_timeout)
            yield Provisioned(info, Path(device), disk)
            return
        assert mountpoint is not None
        check_options(config)  # again at the last moment: a stored plan, a search's configuration
        # from inside the empty mount point just made: a bare relative name in an option reaches nothing
        run(mkfs_command(config, device), package=ft.package, timeout=1800, cwd=str(mountpoint),
            hint=f"check the mkfs options of configuration {config.name}")
        mount(ledger, stack, device, mountpoint, ft.kernel_name, config.mount_options)
        info = _read_back(config, mountpoint, device, scheduler)
        if config.scheduler:
            info = _with_note(info, sched_note)
        aged = None
        if config.age:  # before the data is laid out: it lands in what the aging left free
            aged = age(mountpoint, config.age, config.age_rounds, config.age_seed)
            info = _with_note(info, f"aged to {aged.fill:.0%} full in {aged.rounds} rounds (seed {config.age_seed}): "
                                    f"{aged.files:,} files standing, {aged.bytes_written / 1024**3:.2f} GiB "
                                    f"written in {aged.seconds:.0f} s")
            info = replace(info, space_used_bytes=space_used(str(mountpoint)))
        idle, waited = wait_idle(disk, quiet_s, quiesce_timeout)
        if not idle:
            info = _with_note(info, f"device still busy {waited:.0f}s after mount")
        yield Provisioned(info, _datadir(mountpoint), disk, aged)


def _in_directory(config: FsConfig, ledger: Ledger, stack: ExitStack) -> Provisioned:
    """A data directory of pickfs's own in the configuration's existing directory (no filesystem built)."""
    base = resolve(config.path or "", f"{config.name}: directory")  # no other user's link followed
    datadir = base / f"pickfs-{uuid.uuid4().hex[:12]}"
    stack.enter_context(held(ledger, DIR, path=str(datadir), recursive=True))
    datadir.mkdir(mode=PRIVATE_MODE)
    entry = mount_containing(parse_mountinfo(Path("/proc/self/mountinfo").read_text()), str(base))
    info = MountInfo(None, entry.mountpoint if entry else str(base), entry.fstype if entry else "unknown",
                     (), entry.options if entry else (), None, None, space_used(str(base)))
    return Provisioned(info, datadir, None)


def _datadir(mountpoint: Path) -> Path:
    d = mountpoint / "pickfs-data"
    d.mkdir(mode=PRIVATE_MODE)
    return d


def _with_note(info: MountInfo, note: str) -> MountInfo:
    return replace(info, notes=(*info.notes, note))
