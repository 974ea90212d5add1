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

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pickfs.errors import PickfsError
from pickfs.model import FsConfig
from pickfs.stack import blockdev
from pickfs.stack.cleanup import KINDS, holding
from pickfs.stack.filesystems import fs_type
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import mount_held


class Station:
    """A checker's mount point and ledger entries, until the ExitStack given ends (then undone, newest first)."""

    def __init__(self, stack: ExitStack, ledger: Ledger, config: FsConfig, image: Path, mountpoint: Path) -> None:
        self.config, self.image, self.mountpoint = config, image, mountpoint
        stack.enter_context(holding(ledger, "dir", path=str(mountpoint)))
        mountpoint.mkdir()  # as a state's own was: what the mounted root allows is what counts
        stack.enter_context(holding(ledger, "loop", image=str(image)))  # any loop device on the working image
        self._mount = stack.enter_context(holding(ledger, "mount", mountpoint=str(mountpoint)))[0]
        self._device: str | None = None  # the loop device on the working image, once attached
        # the configuration's mount options, and what lets a copy of the filesystem mount beside another (xfs: nouuid)
        clone = fs_type(config.fstype).clone_mount_options
        self.options = (*config.mount_options, *(o for o in clone if o not in config.mount_options))

    @contextmanager
    def attached(self) -> Iterator[str]:
        """A loop device on the working image. Attached once and kept for all the station's states (the loop
        entry's undo detaches it with the station); after each state's check the blocks the kernel caches of it are
        written back (through the recorder, so they are that state's writes, undone with it) and dropped, so the next
        state's reads come from the image as it is then. A device that reads its file through the page cache (no
        direct I/O) would leave the recorder's file's cache stale: it is detached after each state instead."""
        if self._device is None:
            self._device = blockdev.attach_loop(self.image)
        try:
            yield self._device
        finally:
            if blockdev.loop_direct_io(self._device):
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
