"""Which other mount namespaces hold a copy of a state's mount (read from /proc, here a made-up one)."""

import os

from pickfs.crash.station import namespaces_holding

MINE = "mnt:[4026531841]"
OTHER = "mnt:[4026532999]"
THIRD = "mnt:[4026533000]"


def line(n, majmin, mountpoint, source):
    return f"{n} 27 {majmin} / {mountpoint} rw,relatime - ext4 {source} rw\n"


def process(proc, pid, ns, mounts=""):
    d = proc / str(pid)
    (d / "ns").mkdir(parents=True)
    os.symlink(ns, d / "ns" / "mnt")
    (d / "mountinfo").write_text(line(27, "254:0", "/", "/dev/vda") + mounts)


def test_a_process_in_each_other_namespace_that_holds_the_device_by_number_or_source(tmp_path):
    proc = tmp_path / "proc"
    rdev = os.stat("/dev/null").st_rdev
    number = f"{os.major(rdev)}:{os.minor(rdev)}"
    process(proc, "self", MINE)
    process(proc, 10, MINE, line(42, number, "/var/tmp/w/station-0", "/dev/null"))  # ours, here: not a copy
    process(proc, 20, OTHER, line(42, number, "/var/tmp/w/station-0", "/dev/null"))  # a copy made by unshare
    process(proc, 21, OTHER, line(42, number, "/var/tmp/w/station-0", "/dev/null"))  # the same namespace again
    process(proc, 30, THIRD, line(43, "0:39", "/var/tmp/w/station-1", "/dev/null"))  # btrfs: its own number
    process(proc, 40, "mnt:[4026533001]")  # another namespace without it
    assert namespaces_holding("/dev/null", proc) == [20, 30]
    assert namespaces_holding("/dev/no-such-device", proc) == []
