from pickfs.stack.blockdev import parse_scheduler
from pickfs.stack.mountinfo import compare_options, find_mount, parse_mountinfo

MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
98 22 7:0 / /var/tmp/pickfs/mnt/abc rw,relatime shared:50 - ext4 /dev/loop0 rw,nobarrier,data=writeback
99 22 7:1 / /var/tmp/pickfs/mnt/x\\040y rw,noatime - xfs /dev/loop1 rw,inode64,logbufs=8,logbsize=32k,noquota
"""


def test_parse_mountinfo_merges_mount_and_superblock_options():
    entries = parse_mountinfo(MOUNTINFO)
    e = find_mount(entries, "/var/tmp/pickfs/mnt/abc")
    assert e.fstype == "ext4" and e.source == "/dev/loop0" and e.major_minor == "7:0"
    assert e.options == ("rw", "relatime", "nobarrier", "data=writeback")


def test_mountpoint_escapes_are_decoded():
    assert find_mount(parse_mountinfo(MOUNTINFO), "/var/tmp/pickfs/mnt/x y").fstype == "xfs"


def test_options_in_force_give_no_notes():
    eff = ("rw", "relatime", "nobarrier", "data=writeback")
    assert compare_options(("nobarrier", "data=writeback"), eff, ()) == []
    assert compare_options(("barrier=0",), eff, ()) == []  # listed as nobarrier


def test_changed_value_is_reported():
    eff = ("rw", "logbufs=8", "logbsize=32k")
    notes = compare_options(("logbsize=256k",), eff, ())
    assert notes == ["mount option logbsize=256k not in force: the kernel uses logbsize=32k"]


def test_ignored_option_is_reported_but_defaults_are_not():
    eff = ("rw", "relatime")
    assert compare_options(("rw", "async", "data=ordered"), eff, ("data=ordered",)) == []
    assert compare_options(("discard",), eff, ()) == ["mount option discard not in force: the kernel ignored it"]


def test_parse_scheduler():
    assert parse_scheduler("[none] mq-deadline kyber bfq\n") == ("none", ("none", "mq-deadline", "kyber", "bfq"))
    assert parse_scheduler("none [mq-deadline]")[0] == "mq-deadline"
    assert parse_scheduler("")[0] is None


def test_mount_containing_picks_the_longest_mountpoint():
    from pickfs.stack.mountinfo import mount_containing

    entries = parse_mountinfo(MOUNTINFO)
    assert mount_containing(entries, "/var/tmp/pickfs/mnt/abc/pickfs-data").source == "/dev/loop0"
    assert mount_containing(entries, "/var/tmp/pickfs/mnt/abcdef").mountpoint == "/"  # not a path prefix
    assert mount_containing(entries, "/").mountpoint == "/"
