"""What the kernel and the server said while the fault was in force: /dev/kmsg about one device, the server's log."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pickfs.stack.ledger import process_state
from pickfs.stack.mountinfo import find_mount, parse_mountinfo

MOST = 40  # lines kept


class KernelLog:
    """The kernel's messages that name one block device, from the moment this was made."""

    def __init__(self, disk: str) -> None:
        self.name = re.compile(rf"\b{re.escape(disk)}\b")
        self.lines: list[str] = []
        try:
            self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError as exc:  # no kernel log here (a container): the filesystem's own words are not known
            self.fd = -1
            self.lines.append(f"(the kernel's log could not be read: {exc.strerror})")

    def read(self) -> list[str]:
        while self.fd >= 0:
            try:
                record = os.read(self.fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except BrokenPipeError:  # records overwritten before they were read: go on with the next
                continue
            if not record:
                break
            text = record.split(";", 1)[-1].split("\n", 1)[0]
            if self.name.search(text) and len(self.lines) < MOST and text not in self.lines:
                self.lines.append(text)
        return list(self.lines)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def read_only(mountpoint: str) -> bool:
    """Whether the filesystem mounted there is read-only now (an errors=remount-ro, a btrfs abort)."""
    try:
        entry = find_mount(parse_mountinfo(Path("/proc/self/mountinfo").read_text()), mountpoint)
    except OSError:
        return False
    return entry is not None and "ro" in entry.options


def server_lines(log: str, pattern: re.Pattern[str]) -> list[str]:
    """The server log's lines that match (all of them when it is small), from a file pickfs started it with."""
    try:
        text = Path(log).read_text(errors="replace") if log else ""
    except OSError:
        return []
    return [line for line in text.splitlines() if pattern.search(line)]


def alive(pidfile: str) -> bool:
    """Whether the process a server's pid file names is running: a server that ended and was not yet reaped by
    the process that started it (a zombie, as an aborted MariaDB is until its service stops it) is not."""
    try:
        pid = int(Path(pidfile).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return process_state(pid) not in (None, "Z", "X")
