"""A failing crash state's image is kept without following or overwriting anything planted for it."""

from __future__ import annotations

import os
import stat

import pytest

from pickfs.crash.runner import keep_image
from pickfs.errors import UntrustedPath
from pickfs.safepaths import MARKER

needs_root = pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"), reason="needs root")


def test_kept_image_replaces_a_planted_link_and_is_private(tmp_path):
    image = tmp_path / "state.img"
    image.write_bytes(b"database pages")
    victim = tmp_path / "victim"
    victim.write_text("must stay")
    keep = tmp_path / "keep"
    keep_image(image, keep, "first.img")  # pickfs makes the directory
    (keep / "ext4-w-state-3.img").symlink_to(victim)
    kept = keep_image(image, keep, "ext4-w-state-3.img")
    assert victim.read_text() == "must stay"
    assert not kept.is_symlink() and kept.read_bytes() == b"database pages"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(keep.stat().st_mode) == 0o700
    assert sorted(p.name for p in keep.iterdir()) == sorted([MARKER, "first.img", "ext4-w-state-3.img"])


def test_a_directory_of_the_users_that_holds_something_is_refused_and_left_as_it_was(tmp_path):
    image = tmp_path / "state.img"
    image.write_bytes(b"x")
    keep = tmp_path / "mine"
    keep.mkdir(mode=0o755)
    (keep / "notes.txt").write_text("mine")
    with pytest.raises(UntrustedPath, match="did not make"):
        keep_image(image, keep, "notes.txt")
    assert stat.S_IMODE(keep.stat().st_mode) == 0o755 and os.listdir(keep) == ["notes.txt"]
    assert (keep / "notes.txt").read_text() == "mine"


@needs_root
def test_a_keep_directory_through_another_users_link_or_not_ours_is_refused(tmp_path):
    image = tmp_path / "state.img"
    image.write_bytes(b"x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    link = tmp_path / "keep-link"
    link.symlink_to(elsewhere)
    os.lchown(link, 65534, 65534)
    with pytest.raises(UntrustedPath, match="symbolic link owned by uid 65534"):
        keep_image(image, link, "a.img")
    with pytest.raises(UntrustedPath, match="symbolic link owned by uid 65534"):
        keep_image(image, link / "sub", "a.img")  # a link in the middle of the path
    assert list(elsewhere.iterdir()) == [] and stat.S_IMODE(elsewhere.stat().st_mode) == 0o755
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(UntrustedPath, match="owned by uid 65534"):
        keep_image(image, theirs, "a.img")
    assert list(theirs.iterdir()) == []


def test_a_keep_directory_an_earlier_pickfs_filled_with_images_is_taken(tmp_path):
    image = tmp_path / "state.img"
    image.write_bytes(b"x")
    keep = tmp_path / "old-keep"
    keep.mkdir(mode=0o700)
    (keep / "ext4-w-state-1.img").write_bytes(b"old")
    keep_image(image, keep, "ext4-w-state-2.img")
    assert (keep / "ext4-w-state-1.img").read_bytes() == b"old" and (keep / "ext4-w-state-2.img").read_bytes() == b"x"
