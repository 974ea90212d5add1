"""pickfs's work directory: made by pickfs, or proven to be its own, before anything in it is trusted.

pickfs runs as root and undoes what its ledger names, so the work directory and the ledger
must be writable by pickfs's user alone. The default lies in world-writable /var/tmp, where
anyone could plant a directory first: a work directory or ledger owned by another user,
writable by group or others, or a symbolic link is refused, never used.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pickfs.errors import UntrustedWorkdir
from pickfs.units import has_control

# The work directory: only pickfs's user lists or writes it. Others may pass through (x), because
# database servers run as their own users (postgres, mysql) on filesystems mounted below it.
WORKDIR_MODE = 0o711
# The ledger, the images and every mount point: pickfs's user alone.
PRIVATE_MODE = 0o700


def path_problem(path: str) -> str | None:
    """Why `path` cannot be a work directory (pure): empty, relative, or holding control characters."""
    if not path:
        return "is empty"
    if has_control(path):
        return "holds a newline or another control character"
    if not os.path.isabs(path):
        return "is not an absolute path"
    return None


def owner_problem(mode: int, uid: int, euid: int) -> str | None:
    """Why a directory with this lstat mode and owner is not pickfs's own (pure)."""
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(mode):
        return "is not a directory"
    if uid != euid:
        return f"is owned by uid {uid}, not by uid {euid} that pickfs runs as"
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by group or others"
    return None


def _refuse(path: Path, problem: str, owner: int | None = None) -> UntrustedWorkdir:
    if owner == 0 and os.geteuid() != 0:
        hint = "run pickfs as root (sudo), or pass --workdir a directory of your own"
    else:
        hint = f"move it away (mv {path} {path}.untrusted) so pickfs makes its own, or pass another --workdir"
    return UntrustedWorkdir(f"work directory {path} {problem}; pickfs will not trust it", hint)


def check_path(path: str) -> Path:
    """The work directory as an absolute, normalised path; UntrustedWorkdir when unusable."""
    problem = path_problem(path)
    if problem:
        raise UntrustedWorkdir(f"work directory {path!r} {problem}",
                               "pass --workdir an absolute path of plain characters, e.g. /var/tmp/pickfs")
    return Path(os.path.normpath(path))


def private_dir(path: Path, mode: int) -> Path:
    """Make `path` with `mode`, or prove an existing one is ours; drop any bits beyond `mode`.

    The directory is opened with O_NOFOLLOW and checked through that descriptor, so a symbolic
    link planted in its place is refused rather than followed.
    """
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        verify_private(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        problem = {errno.ELOOP: "is a symbolic link", errno.ENOTDIR: "is not a directory"}.get(
            exc.errno or 0, f"cannot be opened: {exc.strerror}")
        raise _refuse(path, problem) from None
    try:
        st = os.fstat(fd)  # the directory itself, even if swapped since the check above
        owned = owner_problem(st.st_mode, st.st_uid, os.geteuid())
        if owned:
            raise _refuse(path, owned, st.st_uid)
        if stat.S_IMODE(st.st_mode) & ~mode:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & mode)
    finally:
        os.close(fd)
    return path


def verify_private(path: Path) -> None:
    """Refuse an existing directory that is not pickfs's own (nothing is created or changed)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise _refuse(path, f"cannot be read: {exc.strerror}") from None
    problem = owner_problem(st.st_mode, st.st_uid, os.geteuid())
    if problem:
        raise _refuse(path, problem, st.st_uid)


def prepare(workdir: str) -> Path:
    """Create or verify the work directory and its ledger directory; return the work directory."""
    path = check_path(workdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    private_dir(path, WORKDIR_MODE)
    private_dir(path / "ledger", PRIVATE_MODE)
    return path


def inside(path: str, workdir: Path) -> bool:
    """`path`, every symbolic link resolved, lies strictly below the resolved work directory."""
    real, base = os.path.realpath(path), os.path.realpath(workdir)
    return real != base and os.path.commonpath([real, base]) == base
