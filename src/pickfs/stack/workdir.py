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

from pickfs.errors import UntrustedPath, UntrustedWorkdir
from pickfs.safepaths import MARKER, open_dir, resolve
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


def made_problem(names: list[str], uid: int) -> str | None:
    """Why an existing directory with these entries and owner cannot become a work directory (pure): it must be
    one pickfs made (it holds the marker, or the ledger of an earlier pickfs), or be empty and owned by root
    (by pickfs's user when not run as root)."""
    if MARKER in names or "ledger" in names:
        return None
    if names:
        return "is a directory pickfs did not make, and it is not empty"
    if uid != 0 and uid != os.geteuid():
        return f"is owned by uid {uid}"
    return None


def workdir_problem(workdir: str) -> str | None:
    """Why `workdir` could not be pickfs's work directory, judged without creating or changing anything."""
    problem = path_problem(workdir)
    if problem:
        return f"work directory {workdir!r} {problem}"
    try:
        real = resolve(workdir, "work directory")
    except UntrustedPath as exc:
        return exc.message
    try:
        st = os.lstat(real)
        names = os.listdir(real) if stat.S_ISDIR(st.st_mode) else []
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"work directory {workdir} cannot be read: {exc.strerror}"
    owned = owner_problem(st.st_mode, st.st_uid, st.st_uid if st.st_uid == 0 else os.geteuid())
    problem = owned or made_problem(names, st.st_uid)
    return f"work directory {workdir} {problem}" if problem else None


def prepare(workdir: str) -> Path:
    """Create or verify the work directory and its ledger directory; return the work directory.

    Every component on the way is reached without following another user's link (safepaths); the missing
    ones are made. An existing directory is taken only if pickfs made it, or if it is empty and root's."""
    path = check_path(workdir)
    if os.path.islink(path):  # the work directory itself is never a link, not even root's
        raise _refuse(path, "is a symbolic link")
    try:
        real = resolve(path, "work directory")
        with open_dir(real.parent, "work directory", make=True):
            pass
    except UntrustedPath as exc:
        raise UntrustedWorkdir(exc.message, exc.hint) from None
    if real.exists():
        verify_private(real)
        names = os.listdir(real)
        problem = made_problem(names, os.lstat(real).st_uid)
        if problem:
            raise _refuse(path, problem)
    private_dir(real, WORKDIR_MODE)
    marker = real / MARKER
    if not marker.exists():
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    private_dir(real / "ledger", PRIVATE_MODE)
    return path


def inside(path: str, workdir: Path) -> bool:
    """`path`, every symbolic link resolved, lies strictly below the resolved work directory."""
    real, base = os.path.realpath(path), os.path.realpath(workdir)
    return real != base and os.path.commonpath([real, base]) == base
