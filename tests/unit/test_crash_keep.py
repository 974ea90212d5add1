"""A failing crash state's image is kept without following or overwriting anything planted for it."""

from __future__ import annotations

import os
import stat

import pytest

from pickfs.crash.runner import keep_image
from pickfs.errors import UntrustedWorkdir


def test_kept_image_replaces_a_planted_link_and_is_private(tmp_path):
    image = tmp_path / "state.img"
    image.write_bytes(b"database pages")
    victim = tmp_path / "victim"
    victim.write_text("must stay")
    keep = tmp_path / "keep"
    keep.mkdir(mode=0o755)
    (keep / "ext4-w-state-3.img").symlink_to(victim)
    kept = keep_image(image, keep, "ext4-w-state-3.img")
    assert victim.read_text() == "must stay"
    assert not kept.is_symlink() and kept.read_bytes() == b"database pages"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(keep.stat().st_mode) == 0o700
    assert [p.name for p in keep.iterdir()] == ["ext4-w-state-3.img"]  # no temporary file left


def test_a_keep_directory_that_is_a_link_or_not_ours_is_refused(tmp_path):
    image = tmp_path / "state.img"
    image.write_bytes(b"x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "keep-link"
    link.symlink_to(elsewhere)
    with pytest.raises(UntrustedWorkdir):
        keep_image(image, link, "a.img")
    assert list(elsewhere.iterdir()) == []
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
        with pytest.raises(UntrustedWorkdir):
            keep_image(image, theirs, "a.img")
        assert list(theirs.iterdir()) == []
