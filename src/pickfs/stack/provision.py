"""Build one configuration for real: image or device, mkfs, mount, scheduler; read it back."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from pickfs.errors import CommandFailed, ConfigUnavailable
from pickfs.model import FsConfig, MountInfo, Target
from pickfs.proc import run
from pickfs.stack import blockdev
from pickfs.stack.cleanup import holding
from pickfs.stack.filesystems import RAW, fs_type
from pickfs.stack.ledger import Ledger
from pickfs.stack.mountinfo import compare_options, find_mount, mount_containing, parse_mountinfo
from pickfs.stack.quiesce import wait_idle
from pickfs.stack.safety import check_device


@dataclass(frozen=True)
class Provisioned:
    info: MountInfo
    datadir: Path  # where the workload keeps its files; for the raw configuration, the block device itself
    disk: str | None  # kernel name of the block device to watch (loop3, sdb), if any


def space_used(path: str) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _kernel_log_tail(lines: int = 3) -> str:
    try:
        out = run(["dmesg", "--notime"], timeout=10).text.splitlines()
    except Exception:  # noqa: BLE001 - dmesg is a courtesy for the error message
        return ""
    return " | ".join(out[-lines:])


def mount(ledger: Ledger, stack: ExitStack, source: str, mountpoint: Path, fstype: str,
           options: tuple[str, ...]) -> None:
    argv = ["mount", "-t", fstype]
    if options:
        argv += ["-o", ",".join(options)]
    stack.enter_context(holding(ledger, "mount", mountpoint=str(mountpoint)))
    try:
        run([*argv, source, str(mountpoint)], package="util-linux")
    except CommandFailed as exc:
        raise ConfigUnavailable(
            f"mount -t {fstype} -o {','.join(options) or 'defaults'} refused: {_kernel_log_tail(2) or exc.one_line()}",
            "drop or change the refused option in this configuration",
        ) from None


@contextmanager
def attached(image: Path, ledger: Ledger) -> Iterator[str]:
    """A loop device on an image file (ledger-tracked), detached on exit."""
    with holding(ledger, "loop", image=str(image)) as box:
        device = blockdev.attach_loop(image)
        box[0] = ledger.update(box[0], device=device)
        yield device


def _mountdir(ledger: Ledger, stack: ExitStack, workdir: Path) -> Path:
    mountpoint = workdir / "mnt" / uuid.uuid4().hex[:12]
    stack.enter_context(holding(ledger, "dir", path=str(mountpoint)))
    mountpoint.mkdir(parents=True)
    return mountpoint


def _read_back(config: FsConfig, mountpoint: Path, device: str | None, scheduler: str | None) -> MountInfo:
    entry = find_mount(parse_mountinfo(Path("/proc/self/mountinfo").read_text()), str(mountpoint))
    effective = entry.options if entry else ()
    notes = compare_options(config.mount_options, effective, fs_type(config.fstype).implicit)
    if entry and entry.fstype != config.fstype and not (config.fstype == "ext3" and entry.fstype == "ext4"):
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
              quiesce_timeout: float = 60.0, image: Path | None = None) -> Iterator[Provisioned]:
    """A fresh filesystem for `config`, mounted and idle; everything undone on exit.

    `image`: an image file that already exists (the crash recorder's) to build on, instead of a new one.
    """
    workdir = Path(target.workdir)
    with ExitStack() as stack:
        if target.kind == "directory":
            base = Path(config.path or "")
            datadir = base / f"pickfs-{uuid.uuid4().hex[:12]}"
            stack.enter_context(holding(ledger, "dir", path=str(datadir), recursive=True))
            datadir.mkdir()
            entry = mount_containing(parse_mountinfo(Path("/proc/self/mountinfo").read_text()), str(base))
            info = MountInfo(None, entry.mountpoint if entry else str(base), entry.fstype if entry else "unknown",
                             (), entry.options if entry else (), None, None, space_used(str(base)))
            yield Provisioned(info, datadir, None)
            return

        if config.fstype == RAW and target.kind == "directory":
            raise ConfigUnavailable("the raw configuration needs a block device",
                                    "use an image or device target for the raw baseline")
        mountpoint = _mountdir(ledger, stack, workdir) if config.fstype != RAW else None
        if config.fstype == "tmpfs":
            assert mountpoint is not None
            mount(ledger, stack, "pickfs-tmpfs", mountpoint, "tmpfs",
                   (f"size={target.size_bytes}", *config.mount_options))
            info = _read_back(config, mountpoint, None, None)
            yield Provisioned(info, _datadir(mountpoint), None)
            return

        if target.kind == "image":
            if image is None:
                image = workdir / "images" / f"{uuid.uuid4().hex[:12]}.img"
                image.parent.mkdir(parents=True, exist_ok=True)
                stack.enter_context(holding(ledger, "image", path=str(image)))
                with open(image, "wb") as fh:
                    fh.truncate(target.size_bytes)
            device = stack.enter_context(attached(image, ledger))
        else:
            device = target.device or ""
        # Loop devices keep whatever scheduler was last set on them: always set one, so a
        # configuration that names none gets the kernel's default for loop devices.
        wanted = config.scheduler or ("none" if blockdev.is_loop(device) else None)
        scheduler = blockdev.get_scheduler(device)
        if wanted and wanted != scheduler:
            stack.enter_context(holding(ledger, "scheduler", device=device, original=scheduler))
            scheduler = blockdev.set_scheduler(device, wanted)
        disk = blockdev.disk_name(device)
        if config.fstype == RAW:
            if target.kind == "device":  # checked again right before writing: nothing may have mounted it since
                check_device(device, target.confirm)
            info = MountInfo(device, "", RAW, (), (), config.scheduler, scheduler, None)
            wait_idle(disk, quiet_s, quiesce_timeout)
            yield Provisioned(info, Path(device), disk)
            return
        assert mountpoint is not None
        ft = fs_type(config.fstype)
        run([*ft.mkfs, *ft.steady, *config.mkfs_options, device], package=ft.package, timeout=1800,
            hint=f"check the mkfs options of configuration {config.name}")
        mount(ledger, stack, device, mountpoint, config.fstype, config.mount_options)
        info = _read_back(config, mountpoint, device, scheduler)
        idle, waited = wait_idle(disk, quiet_s, quiesce_timeout)
        if not idle:
            info = _with_note(info, f"device still busy {waited:.0f}s after mount")
        yield Provisioned(info, _datadir(mountpoint), disk)


def _datadir(mountpoint: Path) -> Path:
    d = mountpoint / "pickfs-data"
    d.mkdir()
    return d


def _with_note(info: MountInfo, note: str) -> MountInfo:
    return replace(info, notes=(*info.notes, note))
