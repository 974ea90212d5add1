"""Where one checker mounts its crash states, one after another: made and recorded in the ledger once.

Every state's check mounts the checker's working image (journal replay) and unmounts it, as
before; what is made once for all of them is the mount point, the ledger's entries for it, for a
mount on it and for any loop device on the working image, and the loop device itself (the blocks
the kernel caches of it written back and dropped after each state, since the image changes under
it). So a state's check writes nothing to the ledger (each entry was a file written and synced),
and after a kill -9 at any moment `pickfs cleanup` still finds the mount, the device and the
directory: the entries were recorded before the first of them was made.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pickfs.errors import PickfsError
from pickfs.model import FsConfig
from pickfs.proc import run as run_program
from pickfs.stack import blockdev
from pickfs.stack.cleanup import KINDS, holding
from pickfs.stack.filesystems import fs_type
from pickfs.stack.ledger import Ledger
from pickfs.stack.mountinfo import parse_mountinfo
from pickfs.stack.provision import mount_held


class Station:
    """A checker's mount point and ledger entries, until the ExitStack given ends (then undone, newest first)."""

    def __init__(self, stack: ExitStack, ledger: Ledger, config: FsConfig, image: Path, mountpoint: Path,
                 direct_io: bool = False) -> None:
        self.config, self.image, self.mountpoint, self.direct_io = config, image, mountpoint, direct_io
        stack.enter_context(holding(ledger, "dir", path=str(mountpoint)))
        mountpoint.mkdir()  # as a state's own was: what the mounted root allows is what counts
        stack.enter_context(holding(ledger, "loop", image=str(image)))  # any loop device on the working image
        self._mount = stack.enter_context(holding(ledger, "mount", mountpoint=str(mountpoint)))[0]
        self._device: str | None = None  # the loop device on the working image, once attached
        self._free = False  # this state's let_go found the device free (no second exclusive open to learn it)
        # the configuration's mount options, and what lets a copy of the filesystem mount beside another (xfs: nouuid)
        clone = fs_type(config.fstype).clone_mount_options
        self.options = (*config.mount_options, *(o for o in clone if o not in config.mount_options))

    @contextmanager
    def attached(self) -> Iterator[str]:
        """A loop device on the working image, attached once and kept for all the station's states (the loop
        entry's undo detaches it with the station).

        It reads the image through the recorder's page cache (unless `direct_io`), so the kernel reads ahead and a
        journal replayed block by block costs a few large reads of the recorder, not one per block. The working
        image changes under it between states (built, reset, advanced, all behind the recorder's back): before
        each state the recorder's file is opened, which drops what the kernel caches of it (FUSE keeps no cache
        across an open), and after each state the blocks the kernel caches of the device are written back
        (through the recorder: they are that state's writes, undone with it) and dropped. A device a filesystem
        still holds would give the next state that filesystem: it is detached, and the next state attaches
        another."""
        self._free = False
        if self._device is None:
            self._device = blockdev.attach_loop(self.image, direct_io=self.direct_io)
        else:  # the recorder's file's cached pages dropped: by the open itself (FUSE), and by asking
            fd = os.open(self.image, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        try:
            yield self._device
        finally:
            if self._free or blockdev.wait_unused(self._device, 0.0):
                blockdev.drop_cached_blocks(self._device)
            else:
                device, self._device = self._device, None
                blockdev.detach_loop(device)

    @contextmanager
    def mounted(self, device: str) -> Iterator[str]:
        """The device mounted with the configuration's options ("" yielded), or why it would not mount; unmounted
        on exit (the mount entry's own undo: retried while busy, lazily at last)."""
        try:
            mount_held(device, self.mountpoint, self.config.fstype, self.options)
        except PickfsError as exc:
            yield f"would not mount: {exc.message}"
            return
        try:
            yield ""
        finally:
            KINDS["mount"].undo(self._mount)

    def let_go(self, device: str) -> str:
        """After the state's unmount: "" once nothing holds the device (its filesystem gone), else what still did
        after 10 s.

        A mount namespace made while the filesystem was mounted (`unshare --mount`, `ip netns exec`, a container)
        holds a copy of its mount, which keeps the filesystem alive after it is unmounted here: fsck would read it
        half written, and when that namespace ends the filesystem writes its last on whatever state the working
        image then holds. Such copies, of a filesystem of pickfs's own on its own loop device, are unmounted in
        their namespaces (lazily: nothing there uses it) as soon as the device is found held."""
        self._free = blockdev.wait_unused(device, 0.0)
        if self._free:
            return ""
        copies = namespaces_holding(device)
        for pid in copies:
            try:
                run_program(["nsenter", f"--target={pid}", "--mount", "--", "umount", "--lazy", "--all-targets", device],
                            package="util-linux", timeout=30)
            except PickfsError:
                pass  # gone meanwhile, or unmounted there already
        self._free = blockdev.wait_unused(device)
        if self._free:
            return ""
        left = namespaces_holding(device)
        return ("the filesystem was still in use after its unmount"
                + (f", mounted in the mount namespace of process {', '.join(map(str, left))}" if left else "")
                + (f" (its copies in {len(copies)} other mount namespaces unmounted)" if copies else ""))


def namespaces_holding(device: str, proc: Path = Path("/proc")) -> list[int]:
    """The first process of each other mount namespace that holds a mount of `device` (by its source or its device
    number; a namespace whose processes all run in a root the mount is outside of is not seen)."""
    try:
        rdev = os.stat(device).st_rdev
    except OSError:
        return []
    number = f"{os.major(rdev)}:{os.minor(rdev)}"
    try:
        seen = {os.readlink(proc / "self" / "ns" / "mnt")}
    except OSError:
        return []
    found: list[int] = []
    for name in sorted((n for n in os.listdir(proc) if n.isdigit()), key=int):
        try:
            ns = os.readlink(proc / name / "ns" / "mnt")
            if ns in seen:
                continue
            entries = parse_mountinfo((proc / name / "mountinfo").read_text())
        except OSError:
            continue  # ended meanwhile
        seen.add(ns)
        if any(e.source == device or e.major_minor == number for e in entries):
            found.append(int(name))
    return found
