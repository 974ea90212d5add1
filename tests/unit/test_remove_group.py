"""Removing a control group that fails for another reason than processes in it: the hint says what to check."""

from __future__ import annotations

import pytest

from pickfs.errors import ProcessesLeft
from pickfs.stack.tracking import remove_group


def test_a_group_that_cannot_be_removed_for_another_reason_than_busy_says_so(tmp_path):
    group = tmp_path / "not-a-cgroup"
    group.mkdir()
    (group / "left").write_text("x")  # rmdir fails with ENOTEMPTY, not EBUSY
    with pytest.raises(ProcessesLeft) as caught:
        remove_group(group, grace_s=0.1, patience_s=30.0)
    assert "Directory not empty" in caught.value.message
    assert "wait for those processes" not in caught.value.hint and "read-write" in caught.value.hint
