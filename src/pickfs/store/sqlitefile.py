"""The results file itself: checked read-only before pickfs writes a byte to it, created private.

A file pickfs refuses (not SQLite, truncated, another program's database, a newer schema) is
never changed: it is inspected through a read-only connection only.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import sqlite3
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pickfs.errors import PickfsError, ResultsUnusable, ResultsWriteFailed
from pickfs.safepaths import open_dir, resolve

MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
OTHER_FILE = "move it aside, or pass --results PATH (or set $PICKFS_RESULTS) to use another file"


def header_problem(header: bytes, size: int, wal_size: int = 0) -> str | None:
    """What is wrong with an SQLite file, judged from its first 100 bytes and its size (pure).

    None for an empty file (a new database) or a header that agrees with the size. With a
    write-ahead log beside it (`wal_size` > 0) the log may hold pages the file does not have yet.
    """
    if size == 0:
        return None
    if not header.startswith(MAGIC):
        if MAGIC.startswith(header):
            return f"is truncated ({size} bytes, less than an SQLite header)"
        return "is not an SQLite database"
    if len(header) < HEADER_SIZE:
        return f"is truncated ({size} bytes, less than an SQLite header)"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return "is not an SQLite database (bad page size in its header)"
    if wal_size > 0:
        return None
    if size % page_size:
        return f"is truncated ({size} bytes, not a whole number of {page_size}-byte pages)"
    pages = int.from_bytes(header[28:32], "big")
    pages_valid = header[24:28] == header[92:96]  # the page count is valid only when these agree
    if pages_valid and pages and size < pages * page_size:
        return f"is truncated ({size} bytes where its header says {pages * page_size})"
    return None


def schema_problem(tables: set[str], version: str | None, supported: int) -> str | None:
    """Whether a database's tables and stored schema version are a results database pickfs can use (pure)."""
    if not tables:
        return None
    if not {"meta", "runs", "trials"} <= tables:
        shown = ", ".join(sorted(tables)[:5])
        return f"is not a pickfs results database (its tables: {shown})"
    if version is None or not version.isdigit() or int(version) < 1:
        return f"is not a pickfs results database (schema version {version!r})"
    if int(version) > supported:
        return f"was written by a newer pickfs (schema {version}; this pickfs reads up to {supported})"
    return None


def columns_problem(have: dict[str, set[str]], want: dict[str, set[str]]) -> str | None:
    """Whether a database's tables have every column this pickfs reads (pure): a file that claims a schema
    version its tables do not have is refused, never read into an error in a report."""
    for table, columns in want.items():
        missing = sorted(columns - have.get(table, set()))
        if missing:
            return f"is not a pickfs results database (its table {table} has no {', '.join(missing)[:80]})"
    return None


# Results files this process has open through SQLite. Their header is never read again with a
# plain open()/close(): closing any descriptor of a file drops every POSIX lock this process holds
# on it, SQLite's included, and another process could then take the database for unused and
# delete its write-ahead log under our feet (measured: a database corrupted within two rounds).
OPEN_HERE: set[str] = set()


def existing_version(path: Path, supported: int) -> int | None:
    """The schema version of an existing results database, read-only; None when there is none yet.

    Raises ResultsUnusable, naming the file and the fix, for anything pickfs must not write to.
    """
    if str(path.resolve()) in OPEN_HERE:
        return _version_of(path, supported, wal=True)
    try:
        if not path.exists():
            return None
        if not path.is_file():
            raise ResultsUnusable(f"results database {path} is not a regular file", OTHER_FILE)
        size = path.stat().st_size
        wal = Path(f"{path}-wal")
        wal_size = wal.stat().st_size if wal.is_file() else 0
        with open(path, "rb") as fh:
            header = fh.read(HEADER_SIZE)
    except OSError as exc:
        raise ResultsUnusable(f"cannot read results database {path}: {exc.strerror}", OTHER_FILE) from None
    problem = header_problem(header, size, wal_size)
    if problem:
        raise ResultsUnusable(f"results database {path} {problem}", OTHER_FILE)
    if size == 0:
        return None
    return _version_of(path, supported, wal=bool(wal_size))


SIDE_FILES = ("-wal", "-shm", "-journal")


def side_files(path: Path) -> set[str]:
    """Which of SQLite's side files lie beside `path`."""
    return {suffix for suffix in SIDE_FILES if os.path.lexists(f"{path}{suffix}")}


def read_only_connection(path: Path) -> sqlite3.Connection:
    """A connection that reads `path` and creates or changes no file, beside it or in it.

    With no side file there is no writer and nothing to replay: the file is opened immutable (no lock, no
    -wal or -shm made). With a writer's -wal and -shm both there, a read-only connection uses them as they
    are, the -shm opened read-only (SQLite's readonly_shm): a live writer's index is read, and a dead writer's,
    or one a full disk left short, is rebuilt in memory, never in the file. Any other mix (a -wal left without its -shm, a hot -journal) is read from a private copy, where
    SQLite may replay what it must without touching the user's files."""
    for _ in range(4):
        try:
            return _connect_read_only(path)
        except FileNotFoundError:  # a side file gone between the look and the copy: a writer's transaction ended
            time.sleep(0.05)
    return _connect_read_only(path)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    uri = path.resolve().as_uri()
    sides = side_files(path)
    if not sides:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=30)
    if sides == {"-wal", "-shm"}:  # the -shm opened read-only: a live writer's is read, a dead one's never rebuilt
        return sqlite3.connect(f"{uri}?mode=ro&readonly_shm=1", uri=True, timeout=30)
    return _private_copy(path, sides)


def _private_copy(path: Path, sides: set[str]) -> sqlite3.Connection:
    """An in-memory copy of `path` with its side files replayed, made in a private temporary directory."""
    with tempfile.TemporaryDirectory(prefix="pickfs-read-") as tmp:
        copy = Path(tmp) / "copy.db"
        shutil.copyfile(path, copy)
        for suffix in sides - {"-shm"}:
            shutil.copyfile(f"{path}{suffix}", f"{copy}{suffix}")
        src = sqlite3.connect(copy, timeout=30)
        try:
            mem = sqlite3.connect(":memory:")
            src.backup(mem)
        finally:
            src.close()
    return mem


def strict_text(path: Path) -> Callable[[bytes], str]:
    """SQLite's text as str, for a connection's text_factory: a stored text that is not UTF-8 (a damaged file)
    is refused in one line naming the file, wherever it is read, never an error inside a report."""
    def decode(raw: bytes) -> str:
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise ResultsUnusable(f"results database {path} is damaged (a stored text is not UTF-8)",
                                  OTHER_FILE) from None
    return decode


def integrity_problem(conn: sqlite3.Connection) -> str | None:
    """What SQLite's quick check finds wrong in a database (None: nothing)."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
    return None if rows == ["ok"] else "; ".join(rows)[:200]


def _version_of(path: Path, supported: int, wal: bool) -> int | None:
    """The stored schema version, read without creating or changing any file; refusals as ResultsUnusable.
    The file's pages are checked (quick_check) before anything in it is believed."""
    try:
        conn = read_only_connection(path)
        try:
            damage = integrity_problem(conn)
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() \
                if "meta" in tables and not damage else None
        finally:
            conn.close()
    except (sqlite3.Error, OSError) as exc:
        raise unreadable(path, exc) from None
    if damage:
        raise ResultsUnusable(f"results database {path} is damaged (SQLite's check: {damage})", OTHER_FILE)
    version = None if row is None else str(row[0])
    problem = schema_problem(tables, version, supported)
    if problem:
        hint = "upgrade pickfs, or pass --results PATH to use another file" if "newer" in problem else OTHER_FILE
        raise ResultsUnusable(f"results database {path} {problem}", hint)
    return int(version) if version is not None else None


LOW_SPACE = 256 * 1024  # bytes: less than this free, and SQLite cannot make its -shm and the first pages of a -wal


def no_space(directory: Path) -> bool:
    """Whether the filesystem holding `directory` is full: less than LOW_SPACE free (root counts the blocks kept
    for root), or no inode left."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return False
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    return blocks * st.f_frsize < LOW_SPACE or (st.f_files > 0 and st.f_ffree == 0)


def _read_only_fs(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def full_disk(path: Path, run_id: str | None = None) -> ResultsWriteFailed:
    """The results file's filesystem is full: one line naming the file and the fix (pure)."""
    fix = "free space there, or pass --results PATH on another filesystem"
    if run_id:
        fix += f"; the trials saved so far are kept: continue with pickfs run --resume {run_id}"
    return ResultsWriteFailed(f"no space left on the device holding the results database {path}", fix)


def _is_full(path: Path, exc: BaseException) -> bool:
    """A failure that a full disk explains: SQLite or the system says so, or an I/O error on a full filesystem
    (SQLite reports a -shm it cannot extend as an I/O error)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
        return True
    return name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")) and no_space(Path(path).parent)


def unreadable(path: Path, exc: BaseException) -> PickfsError:
    """Why a results file could not be read, in one line: damaged, or the disk it is on (full, failing)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if _is_full(path, exc):
        return full_disk(path)
    if isinstance(exc, OSError) or name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_BUSY", "SQLITE_LOCKED",
                                                    "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH")):
        reason = getattr(exc, "strerror", None) or str(exc)
        return ResultsUnusable(f"results database {path} cannot be read ({reason})",
                               "check the disk it is on, or pass --results PATH to another file")
    return ResultsUnusable(f"results database {path} is damaged or not an SQLite database ({exc})", OTHER_FILE)


def writable_path(path: Path) -> Path:
    """The results file to write, resolved with no other user's link on the way (safepaths), its missing
    directories made 0700; UntrustedPath otherwise, ResultsUnusable for a name that is not a regular file."""
    real = resolve(path, "results database")
    with open_dir(real.parent, "results database", make=True, mode=0o700) as dfd:
        st = os.fstat(dfd)
    # SQLite opens the file by its name: a directory another user can change could swap it for a link meanwhile
    if st.st_uid not in (0, os.geteuid()) or (st.st_mode & 0o022 and not st.st_mode & 0o1000):
        raise ResultsUnusable(f"results database {path} lies in a directory another user can change "
                              f"({real.parent}, owned by uid {st.st_uid}, mode {st.st_mode & 0o7777:o})",
                              "keep results in a directory of your own, e.g. the work directory (the default)")
    if os.path.lexists(real) and not real.is_file():
        raise ResultsUnusable(f"results database {path} is not a regular file", OTHER_FILE)
    for name in (real, *(Path(f"{real}{suffix}") for suffix in SIDE_FILES)):
        problem = owner_problem(name)
        if problem:
            raise ResultsUnusable(f"results database {path} is not pickfs's to write: {problem}",
                                  "move it aside, or pass --results PATH to a file of your own (pickfs makes it 0600)")
    return real


def owner_problem(path: Path) -> str | None:
    """Why an existing file is not one pickfs may write into (None: it is, or there is none): it belongs to another
    user than root or pickfs's, or another user can write to it (what it holds is then anyone's)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path.name} cannot be read ({exc.strerror})"
    if st.st_uid not in (0, os.geteuid()):
        return f"{path.name} belongs to uid {st.st_uid}"
    if st.st_mode & 0o022:
        return f"{path.name} can be written by another user than pickfs's (mode {st.st_mode & 0o7777:o})"
    return None


def create_private(path: Path) -> bool:
    """Create an empty results file readable by its owner only (0600); False when it already exists."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return True


def remove_side_files(path: Path, suffixes: set[str]) -> None:
    """Remove SQLite's side files of `path` that a failed open made (`suffixes`), unless another process has the
    database open (it holds a lock on the -shm): a file that failed to open leaves nothing beside it."""
    shm = f"{path}-shm"
    try:
        fd = os.open(shm, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        fd = -1
    if fd >= 0:
        try:  # SQLite's unix VFS holds bytes 120-128 of the -shm (its locks and the "dead man switch") while open
            probe = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 120, 9, 0)
            held = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, probe))[0] != fcntl.F_UNLCK
        except OSError:
            held = True
        finally:
            os.close(fd)
        if held:
            return
    for suffix in suffixes:
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def remove_created(path: Path) -> None:
    """Remove a results file this pickfs created and could not finish, with SQLite's side files."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def write_failure(path: Path, exc: BaseException, run_id: str | None = None) -> ResultsWriteFailed:
    """A failed write to the results database as one line naming the file and the fix (pure but for a look at
    the free space of its filesystem, after an I/O error)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    code = getattr(exc, "errno", None)
    if _is_full(path, exc):
        return full_disk(path, run_id)
    if name.startswith("SQLITE_READONLY") or code in (errno.EROFS, errno.EACCES, errno.EPERM):
        what, fix = "it is read-only", "pass --results PATH to a writable file"
    elif name.startswith(("SQLITE_CANTOPEN", "SQLITE_IOERR")) and _read_only_fs(Path(path).parent):
        what, fix = "it is on a read-only filesystem", "pass --results PATH to a writable file"
    elif name.startswith("SQLITE_BUSY") or name.startswith("SQLITE_LOCKED"):
        what, fix = "another process holds it locked", "wait for the other pickfs, or pass --results PATH"
    else:
        reason = getattr(exc, "strerror", None) or str(exc)
        what, fix = reason, "check the disk it is on, or pass --results PATH to another file"
    if run_id:
        fix += f"; the trials saved so far are kept: continue with pickfs run --resume {run_id}"
    return ResultsWriteFailed(f"cannot write the results database {path}: {what}", fix)
