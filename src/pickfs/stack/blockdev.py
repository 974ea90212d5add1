"""Block devices: loop devices, schedulers and /proc/diskstats."""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

from pickfs.errors import CommandFailed, ConfigUnavailable
from pickfs.proc import run


def attach_loop(image: Path, direct_io: bool = True) -> str:
    argv = ["losetup", "--find", "--show"]
    if direct_io:
        argv.append("--direct-io=on")
    out = run([*argv, str(image)], package="util-linux", hint="is the loop module loaded? try: modprobe loop")
    return out.text.strip()


def wait_unused(device: str, timeout_s: float = 10.0) -> bool:
    """Wait until nothing holds the device (no mount, not even a lazily unmounted one still in use): an exclusive
    open succeeds. False when something still holds it after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.close(os.open(device, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC))
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


BLKFLSBUF = 0x1261  # _IO(0x12, 97): write back and drop a block device's cached blocks


def drop_cached_blocks(device: str) -> None:
    """Write back and drop the blocks the kernel caches of a device (unused: not mounted), so that reads after it
    come from what is under it now (its loop device's file changed behind it)."""
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, BLKFLSBUF, 0)
    finally:
        os.close(fd)


def loop_backing_files(sys_block: Path = Path("/sys/block")) -> dict[str, str]:
    """Every attached loop device and the file behind it, from sysfs (a path may hold any character)."""
    out = {}
    for d in sys_block.glob("loop*"):
        try:
            raw = (d / "loop" / "backing_file").read_bytes()
        except OSError:
            continue  # not attached
        out[f"/dev/{d.name}"] = os.fsdecode(raw[:-1] if raw.endswith(b"\n") else raw)
    return out


def devices_backed_by(backing: dict[str, str], image: str, real: str) -> list[str]:
    """The devices whose backing file is the image (by the path given or its resolved form), in order (pure)."""
    found = [dev for dev, path in backing.items() if path in (image, real) and is_loop(dev)]
    return sorted(found, key=lambda dev: int(dev.removeprefix("/dev/loop")))


def loops_backed_by(image: Path) -> list[str]:
    return devices_backed_by(loop_backing_files(), str(image), os.path.realpath(image))


def detach_loop(device: str) -> None:
    """Detach a loop device; one the kernel detached meanwhile is done (not an error). A detach while something
    else still has the device open (udev's probe after an unmount) is left by the kernel to that last close: a
    device listed as attached a moment before can be gone when losetup reaches it ("No such device or address")."""
    if not is_loop(device):
        raise ConfigUnavailable(f"{device!r} is not a loop device", "pickfs detaches only /dev/loopN devices")
    try:
        run(["losetup", "-d", device], package="util-linux")
    except CommandFailed:
        for _ in range(20):  # one being detached (refused while its last close is pending) is gone within moments
            if device not in loop_backing_files():
                return
            time.sleep(0.1)
        raise


def loop_direct_io(device: str) -> bool | None:
    p = Path(f"/sys/block/{Path(device).name}/loop/dio")
    try:
        return p.read_text().strip() == "1"
    except OSError:
        return None


def discard_disabled(device: str) -> bool:
    """The device can discard but someone turned it off (loop devices keep that across uses)."""
    queue = Path(f"/sys/block/{disk_name(device)}/queue")
    try:
        return (int((queue / "discard_max_bytes").read_text()) == 0
                and int((queue / "discard_max_hw_bytes").read_text()) > 0)
    except (OSError, ValueError):
        return False


def disk_name(device: str) -> str:
    """The kernel name of the whole disk that holds a device (sda1 -> sda, loop3 -> loop3)."""
    name = Path(os.path.realpath(device)).name
    sys_path = Path(f"/sys/class/block/{name}")
    if (sys_path / "partition").exists():
        return Path(os.path.realpath(sys_path)).parent.name
    return name


def parse_scheduler(text: str) -> tuple[str | None, tuple[str, ...]]:
    """'[none] mq-deadline kyber' -> ('none', ('none', 'mq-deadline', 'kyber'))."""
    names, current = [], None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            current = word
        names.append(word)
    return current, tuple(names)


def scheduler_path(device: str) -> Path:
    return Path(f"/sys/block/{disk_name(device)}/queue/scheduler")


def get_scheduler(device: str) -> str | None:
    try:
        return parse_scheduler(scheduler_path(device).read_text())[0]
    except OSError:
        return None


def set_scheduler(device: str, name: str) -> str:
    """Set and read back; a scheduler the kernel refuses makes the configuration unavailable."""
    path = scheduler_path(device)
    try:
        path.write_text(name)
    except OSError as exc:
        available = parse_scheduler(path.read_text())[1] if path.exists() else ()
        raise ConfigUnavailable(
            f"kernel refused I/O scheduler {name} on {disk_name(device)}: {exc.strerror}",
            f"available here: {', '.join(available) or 'none'}; for bfq or kyber load the module (modprobe {name})",
        ) from None
    effective = get_scheduler(device)
    if effective != name:
        raise ConfigUnavailable(f"I/O scheduler {name} did not take on {disk_name(device)} (still {effective})",
                                "check dmesg")
    return effective


_LOOP_RE = re.compile(r"^/dev/loop\d+$")


def is_loop(device: str) -> bool:
    return bool(_LOOP_RE.match(device))


def disk_holding(path: Path) -> str | None:
    """The whole disk under the filesystem that holds `path` (an image file): vda for /var/tmp on vda1.
    None when it is not a block device (tmpfs, overlay, btrfs's anonymous device)."""
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    sys_dev = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sys_dev.exists():
        return None
    name = Path(os.path.realpath(sys_dev)).name
    slaves = sorted(p.name for p in Path(f"/sys/class/block/{name}/slaves").glob("*"))
    if slaves:  # device-mapper or md: the first disk below it
        name = slaves[0]
    return disk_name(f"/dev/{name}")


def scheduler_note(device: str, requested: str | None, effective: str | None, host_disk: str | None,
                   host_scheduler: str | None) -> str:
    """Which queue the scheduler setting changes (pure). On a loop device the setting orders only
    the loop device's own queue; the image's writes then reach the host disk, whose own scheduler
    orders the real I/O: a scheduler comparison needs a device target."""
    name = disk_name(device) if not device.startswith("/dev/loop") else device.rsplit("/", 1)[-1]
    if device.startswith("/dev/loop"):
        host = f"the host disk {host_disk}" if host_disk else "the disk holding the image"
        theirs = f" ({host_scheduler})" if host_scheduler else ""
        return (f"scheduler {effective or requested or 'none'} is on the loop device "
                f"{name}'s queue only: {host}'s own scheduler{theirs} still orders the real I/O; "
                "to compare schedulers use a device target (--device)")
    return f"scheduler {effective or 'none'} is on {name}'s queue, the disk under test"
