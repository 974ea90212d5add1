"""Paths pickfs writes to: no symbolic link of another user followed, no directory of the user's taken over.

pickfs runs as root, and the paths it is given (--results, --html, --site, --keep-states, --workdir)
often lie below world-writable directories where anyone can plant a link. Every path written is
therefore first resolved component by component, following only links owned by root or by pickfs's
own user, then opened from / downwards one component at a time with O_NOFOLLOW: a link planted (or
swapped in) on the way makes pickfs refuse, in one line, never follow. The final name of a file written
is never resolved, whoever owns a link there: the file is created 0600 under a fresh name and renamed
into place, so a symbolic link or a hard link under the final name is replaced, not written through.

A directory pickfs writes into is either one it made (it holds a MARKER file) or one that is empty and
owned by pickfs's user: a directory of the user's that already holds something is refused, never changed.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pickfs.errors import UntrustedPath
from pickfs.units import has_control

MARKER = ".pickfs-made"
_MAX_LINKS = 40


def _trusted_owners() -> tuple[int, ...]:
    return (0, os.geteuid())


def _refused(what: str, path: str | Path, problem: str, hint: str = "") -> UntrustedPath:
    return UntrustedPath(f"{what} {path}: {problem}; pickfs will not write there",
                         hint or "name a path of your own, with no other user's symbolic link on the way")


def resolve(path: str | Path, what: str, shown: str | Path | None = None) -> Path:
    """`path` made absolute with every symbolic link on it resolved; UntrustedPath when a link on the way is
    owned by another user than root or pickfs's own. The part of the path that does not exist yet is kept.
    Refusals name `shown` (the path the user gave, when `path` is its directory), else `path`."""
    text = str(path)
    path = path if shown is None else shown
    if not text or has_control(text):
        raise _refused(what, repr(text), "is empty or holds a control character", "name a path of plain characters")
    parts = deque(os.path.abspath(text).split("/"))
    done, links = "/", 0
    while parts:
        name = parts.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            done = os.path.dirname(done)
            continue
        here = os.path.join(done, name)
        _not_system(Path(here), path, what)  # before any of its links is read: /proc's name open files
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return _not_system(Path(os.path.normpath(os.path.join(here, *parts))), path, what)
        except OSError as exc:
            raise _refused(what, path, f"{here} cannot be read ({exc.strerror})") from None
        if not stat.S_ISLNK(st.st_mode):
            done = here
            continue
        if st.st_uid not in _trusted_owners():
            raise _refused(what, path, f"{here} is a symbolic link owned by uid {st.st_uid}")
        links += 1
        if links > _MAX_LINKS:
            raise _refused(what, path, "has too many levels of symbolic links")
        target = os.readlink(here)
        if target.startswith("/"):
            done = "/"
        parts.extendleft(reversed(target.split("/")))
    return _not_system(Path(done), path, what)


# The kernel's own trees: their links (/proc/self/fd/1, /dev/stdout) name open files and devices, not paths.
SYSTEM_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))
SYSTEM_ALLOWED = (Path("/dev/shm"),)


def _not_system(real: Path, path: str | Path, what: str) -> Path:
    if any(real == t or t in real.parents for t in SYSTEM_TREES) and \
            not any(real == a or a in real.parents for a in SYSTEM_ALLOWED):
        raise _refused(what, path, f"lies in the kernel's {real.parts[1] if len(real.parts) > 1 else real} tree",
                       "name a file or directory on a filesystem ('-' for standard output)")
    return real


def _walk_error(what: str, path: Path, at: str, exc: OSError) -> UntrustedPath:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return _refused(what, path, f"{at} is not a directory (a symbolic link, or changed while pickfs opened it)")
    if exc.errno == errno.ENOENT:
        return _refused(what, path, f"the directory {at} does not exist",
                        f"create it first (mkdir -p {at}), or name a path in an existing directory")
    return _refused(what, path, f"{at} cannot be opened ({exc.strerror})", "name a path you can write to")


@contextmanager
def open_dir(path: Path, what: str, make: bool = False, mode: int = 0o755) -> Iterator[int]:
    """A descriptor of the directory `path` (already resolved), opened from / one component at a time
    without following any link; with `make`, missing components are made (`mode`)."""
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        at = "/"
        for name in path.parts[1:]:
            at = os.path.join(at, name)
            try:
                nxt = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError as exc:
                if not make:
                    raise _walk_error(what, path, at, exc) from None
                try:
                    os.mkdir(name, mode, dir_fd=fd)
                    nxt = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                except OSError as exc2:
                    raise _walk_error(what, path, at, exc2) from None
            except OSError as exc:
                raise _walk_error(what, path, at, exc) from None
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _entry(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def check_target(path: str | Path, what: str) -> Path:
    """Where a file will be written, checked without writing anything: its directory is reached without another
    user's link and exists, and the name in it is a regular file, a symbolic link or nothing yet (not a
    directory, a device, a pipe).

    The name itself is never resolved: a symbolic link there (anyone's, dangling or not, to a file or to a
    directory) is replaced by the file written, never written through; only the directories on the way follow
    root's own links."""
    text = str(path)
    name = os.path.basename(os.path.abspath(text)) if text else ""
    if has_control(text):
        raise _refused(what, repr(text), "is empty or holds a control character", "name a path of plain characters")
    if not name or name in (".", "..") or text.endswith("/"):
        raise _refused(what, path, "is a directory", "name a regular file ('-' for standard output)")
    real = _not_system(resolve(os.path.dirname(os.path.abspath(text)), what, shown=path) / name, path, what)
    with open_dir(real.parent, what) as dfd:
        _replaceable(_entry(dfd, real.name), what, path)
    return real


def _replaceable(st: os.stat_result | None, what: str, path: str | Path) -> None:
    """A name a file may be renamed onto: nothing, a regular file or a symbolic link (replaced, not followed)."""
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISLNK(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise _refused(what, path, f"is {kind}", "name a regular file ('-' for standard output)")


def invoking_user(environ: Mapping[str, str], euid: int) -> tuple[int, int] | None:
    """The user and group who ran pickfs through sudo (SUDO_UID, SUDO_GID), when pickfs runs as root and they are
    another user's; None otherwise (pure)."""
    if euid != 0:
        return None
    try:
        uid, gid = int(environ["SUDO_UID"]), int(environ["SUDO_GID"])
    except (KeyError, ValueError):
        return None
    return (uid, gid) if uid > 0 and gid >= 0 else None


def current_umask(status: str) -> int:
    """The Umask line of /proc/self/status's text (pure); 0o022 when absent."""
    for line in status.splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    return 0o022


def write_export(path: str | Path, data: bytes, what: str) -> Path:
    """A file the user asked for (a report, an export, a site page): written as write_file does, but readable as
    any file the user makes (0666 less the umask) and, when pickfs runs through sudo, owned by the user who ran it,
    not by root alone."""
    try:
        umask = current_umask(Path("/proc/self/status").read_text())
    except OSError:
        umask = 0o022
    return write_file(path, data, what, mode=0o666 & ~umask, owner=invoking_user(os.environ, os.geteuid()))


def write_file(path: str | Path, data: bytes, what: str, mode: int = 0o600,
               owner: tuple[int, int] | None = None) -> Path:
    """Write `data` to `path` as a fresh file (`mode`, and `owner`'s uid and gid when given) renamed into place,
    replacing whatever file or link held the name; returns the path written."""
    real = check_target(path, what)
    with open_dir(real.parent, what) as dfd:
        tmp = f".{real.name}.pickfs-{os.getpid()}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
        except OSError as exc:
            raise _refused(what, path, f"cannot be created ({exc.strerror})", "name a file you can write") from None
        try:
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), mode)
                if owner is not None:
                    os.fchown(fh.fileno(), *owner)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            _replaceable(_entry(dfd, real.name), what, path)  # once more, just before the rename
            os.rename(tmp, real.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError as exc:
            _unlink(dfd, tmp)
            raise UntrustedPath(f"cannot write {what} {path}: {exc.strerror}",
                                "free space there, or name another file") from None
        except BaseException:
            _unlink(dfd, tmp)
            raise
    return real


def _unlink(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def dir_problem(st: os.stat_result, names: list[str], made: Callable[[list[str]], bool] | None = None) -> str | None:
    """Why an existing directory (its stat and entries) is not one pickfs may write into (pure but for geteuid)."""
    if st.st_uid not in _trusted_owners():
        return f"is not your own directory (owned by uid {st.st_uid}, not by uid {os.geteuid()} that pickfs runs as)"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is not your own directory (others can write to it)"
    if names and MARKER not in names and not (made is not None and made(names)):
        return "is a directory pickfs did not make, and it is not empty"
    return None


def own_dir(path: str | Path, what: str, mode: int = 0o700, parents: bool = False,
            made: Callable[[list[str]], bool] | None = None) -> Path:
    """The directory `path`, made (`mode`, holding MARKER) or proven pickfs's own; returns it resolved.

    An existing directory is never changed, only refused: one pickfs did not make is accepted only while it is
    empty and owned by pickfs's user (it then gets the MARKER), or one whose entries `made` says an earlier
    pickfs wrote (before it marked its directories)."""
    real = resolve(path, what)
    if real == Path("/"):
        raise _refused(what, path, "is the root directory")
    with open_dir(real.parent, what, make=parents) as pfd:
        try:
            os.mkdir(real.name, mode, dir_fd=pfd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _refused(what, path, f"cannot be made ({exc.strerror})", "name a directory you can write to") from None
        try:
            dfd = os.open(real.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
        except OSError as exc:
            raise _walk_error(what, real, str(real), exc) from None
    try:
        names = os.listdir(dfd)
        problem = dir_problem(os.fstat(dfd), names, made)
        if problem:
            raise _refused(what, path, problem, "name a new or empty directory of your own, e.g. " + f"{real}.d")
        if MARKER not in names:
            os.close(os.open(MARKER, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd))
    finally:
        os.close(dfd)
    return real


def check_own_dir(path: str | Path, what: str, made: Callable[[list[str]], bool] | None = None) -> str | None:
    """Why `path` could not be pickfs's directory, judged without changing anything (None: it can be)."""
    try:
        real = resolve(path, what)
        st = os.lstat(real)
    except UntrustedPath as exc:
        return exc.message
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{what} {path} cannot be read ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{what} {path} is a file, not a directory"
    try:
        names = os.listdir(real)
    except OSError as exc:
        return f"{what} {path} cannot be read ({exc.strerror})"
    problem = dir_problem(st, names, made)
    return f"{what} {path} {problem}" if problem else None


def read_small(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of a small input file (a plan, a fingerprint): a regular file of at most `limit` bytes.
    A device, a FIFO or a file too large is refused (ValueError naming why), never read without end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{what} {path} is not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{what} {path} is {st.st_size} bytes, more than the {limit // 1024} KiB a {what} may be")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{what} {path} grew past {limit // 1024} KiB while it was read")
    return data
