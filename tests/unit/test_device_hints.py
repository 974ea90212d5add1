"""The fix offered for a device pickfs refuses makes sense where the device is: the disk the system runs from is
never to be unmounted for pickfs (a dry run with --device /dev/vda once offered "umount /")."""

from __future__ import annotations

import pytest

from pickfs.stack.safety import mounted_refusal, root_refusal


@pytest.mark.parametrize("mountpoints", [["/"], ["/boot", "/"], ["/var/lib/docker", "/"]])
def test_the_root_disk_is_refused_as_such(mountpoints):
    err = mounted_refusal("/dev/vda", mountpoints)
    assert err.one_line() == root_refusal("/dev/vda").one_line()
    assert "holds the root filesystem" in err.message and "never formats the disk the system runs from" in err.message
    assert "umount" not in err.one_line() and err.hint.startswith("name a spare disk")


@pytest.mark.parametrize("where", ["/boot", "/boot/efi", "/home", "/var", "/usr"])
def test_a_disk_the_system_uses_is_never_to_be_unmounted(where):
    err = mounted_refusal("/dev/sdb", [where])
    assert f"mounted on {where}, which the system uses" in err.message
    assert "umount" not in err.one_line() and err.hint.startswith("name a spare disk")


def test_a_spare_disk_someone_mounted_may_be_unmounted():
    err = mounted_refusal("/dev/sdb", ["/mnt/scratch"])
    assert err.message == "/dev/sdb is mounted on /mnt/scratch"
    assert "umount /mnt/scratch" in err.hint and "if it holds nothing you need" in err.hint
