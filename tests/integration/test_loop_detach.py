"""A loop device the kernel detached by itself (a detach left to its last close) is detached: no error."""

import os
import subprocess
import time

from pickfs.stack.blockdev import attach_loop, detach_loop, loop_backing_files
from tests.conftest import needs_root

pytestmark = [needs_root]


def test_a_loop_device_detached_at_its_last_close_detaches_without_error(workdir):
    image = workdir / "x.img"
    with open(image, "wb") as fh:
        fh.truncate(16 * 1024**2)
    device = attach_loop(image, direct_io=False)
    fd = os.open(device, os.O_RDONLY)  # another opener (a probe of the device, a filesystem not yet let go)
    try:
        subprocess.run(["losetup", "-d", device], check=True)  # left to the last close
        assert device in loop_backing_files()  # still listed as attached: a cleanup would detach it
    finally:
        os.close(fd)  # the kernel detaches it now
    for _ in range(50):
        if device not in loop_backing_files():
            break
        time.sleep(0.1)
    detach_loop(device)  # before: 'losetup -d: No such device or address'
    assert device not in loop_backing_files()
