"""What the client was told, what the server and the filesystem did, and what was there after restart (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from pickfs.faults.causes import causes_for

ACK, ERR = "A", "E"


@dataclass(frozen=True)
class ClientLog:
    acked: dict[int, int]  # commit -> t_ns of its acknowledgement
    failed: dict[int, tuple[int, str]]  # commit -> (t_ns, the error the client was given)
    unconnected: int  # attempts to connect that failed (nothing was sent)
    write_backs: int
    write_back_errors: tuple[str, ...]
    first_error: str = ""
    write_back_ok_after_error: bool = False  # a write-back asked for succeeded after one had failed


def parse_client_log(text: str) -> ClientLog:
    """The client's log (faults/client.py's lines) read back; a line cut short at the end is skipped."""
    acked: dict[int, int] = {}
    failed: dict[int, tuple[int, str]] = {}
    unconnected = backs = 0
    back_errors: list[str] = []
    first = ""
    back_failed_at: int | None = None
    back_ok_after = False
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or not parts[2].isdigit():
            continue
        who, what, t = parts[0], parts[1], int(parts[2])
        said = parts[3] if len(parts) > 3 else ""
        if who.isdigit() and what == ACK:
            acked[int(who)] = t
        elif who.isdigit() and what == ERR:
            failed[int(who)] = (t, said)
            first = first or said
        elif what == "C":
            unconnected += 1
        elif what == "K":
            backs += 1
            back_ok_after = back_ok_after or (back_failed_at is not None and t > back_failed_at)
        elif what == "k":
            back_errors.append(said)
            back_failed_at = t if back_failed_at is None else back_failed_at
    return ClientLog(acked, failed, unconnected, backs, tuple(back_errors[:5]), first, back_ok_after)


@dataclass(frozen=True)
class Truth:
    """What the database held after the filesystem was mounted again and the database recovered."""

    came_up: bool
    present: frozenset[int] = frozenset()
    newest: int | None = None  # the newest-commit row
    own_check: str = ""  # "ok", or what the database's own check found
    invariant: str = ""  # "ok", or how the balances disagree with the commits
    problem: str = ""  # why it did not come up, or what else went wrong
    fsck_ok: bool | None = None
    fsck_said: str = ""


@dataclass(frozen=True)
class Counts:
    acked: int
    acked_present: int
    acked_lost: int
    failed: int
    false_failures: int  # the client was told it failed, yet it is there
    old_value: str  # the newest-commit row reads an older commit than the newest present ("" when not)
    corruption: str  # the database's own check or the invariant ("" when both passed)
    lost_ids: tuple[int, ...] = ()
    false_ids: tuple[int, ...] = ()


def classify(log: ClientLog, truth: Truth) -> Counts:
    """Every transaction against what was there after restart (pure)."""
    present = truth.present if truth.came_up else frozenset()
    lost = sorted(n for n in log.acked if n not in present)
    false = sorted(n for n in log.failed if n in present)
    newest_present = max(present, default=0)
    old = ""
    if truth.came_up and truth.newest is not None and truth.newest < newest_present:
        old = f"the newest-commit row reads commit {truth.newest:,}, but commit {newest_present:,} is there"
    bad = [x for x in (truth.own_check, truth.invariant) if x and x != "ok"]
    return Counts(len(log.acked), len(log.acked) - len(lost), len(lost), len(log.failed), len(false), old,
                  "; ".join(bad), tuple(lost[:20]), tuple(false[:20]))


@dataclass(frozen=True)
class Behaviour:
    """What the server and the filesystem did while the fault was in force."""

    server: str  # in words
    filesystem: str  # in words
    kernel: tuple[str, ...] = ()  # the kernel's messages about the device, the first ones
    server_log: tuple[str, ...] = ()  # the server's lines about the error


# the kernel's words for what a filesystem did, in the order they are looked for
FS_SIGNS = (
    (re.compile(r"Filesystem has been shut down|Shutting down filesystem|shutdown", re.I), "shut down (xfs)"),
    (re.compile(r"Transaction aborted|forced readonly", re.I), "aborted its transaction and went read-only (btrfs)"),
    (re.compile(r"Remounting filesystem read-only", re.I), "remounted itself read-only (ext4)"),
    (re.compile(r"Aborting journal|Detected aborted journal", re.I), "aborted its journal"),
    (re.compile(r"error", re.I), "logged the error and kept running"),
)
IO_ERROR = re.compile(r"I/O error", re.I)


def committed_after_error(log: ClientLog) -> bool:
    """Whether the client had a commit acknowledged after the first error it was given (pure)."""
    first = min((t for t, _ in log.failed.values()), default=None)
    return first is not None and any(t > first for t in log.acked.values())


def filesystem_said(kernel: list[str], read_only: bool) -> str:
    """What the filesystem did, from the kernel's messages about its device and whether it is read-only now."""
    fs_lines = [line for line in kernel if not IO_ERROR.search(line) or "EXT4-fs" in line or "XFS" in line]
    for sign, words in FS_SIGNS:
        if any(sign.search(line) for line in fs_lines):
            return words + (" (read-only now)" if read_only and "read-only" not in words else "")
    if read_only:
        return "went read-only"
    if any(IO_ERROR.search(line) for line in kernel):
        return "said nothing (the kernel logged the block I/O error)"
    return "said nothing"


PANICKED = "stopped (PANIC)"
CRASHED = "stopped (a server process crashed; its log was not written)"
FAILED_ON_IO = "failed on the I/O error (its log on the failing filesystem has no more)"
EMBEDDED = "embedded in the client: the library's answers are the client's"
NO_SERVER = "none: your command ran without a server pickfs started"
SERVER_SIGNS = (
    (re.compile(r"\bPANIC\b"), PANICKED),
    (re.compile(r"terminated by signal 6|Aborted|got signal 6\b"), "aborted"),  # PostgreSQL's words, MariaDB's
    # what the client was told when the server's own log could not be written (on the failing filesystem)
    (re.compile(r"crash of another server process|server closed the connection unexpectedly"), CRASHED),
    (re.compile(r"^client: .*(could not (fdatasync|fsync|write)|Input/output error)"), FAILED_ON_IO),
)
# what the server did, in a table's few words: the why in brackets left to the verdict, what it did kept
SERVER_SHORT = {PANICKED: "PANIC", CRASHED: "crashed", FAILED_ON_IO: "failed on the I/O error",
                EMBEDDED: "none (embedded)", NO_SERVER: "none (your command)"}
RESTARTED = re.compile(r"all server processes terminated; reinitializing|the database system is in recovery mode|"
                       r"the database system is starting up")
READY = re.compile(r"database system is ready to accept connections")
IO_LINE = re.compile(r"PANIC|ERROR|WARNING|could not (fsync|write)|Input/output error", re.I)


def server_said(log_lines: list[str], alive: bool, embedded: bool, committed_after: bool = False) -> str:
    """What the server did (pure): from its log and what its client was told, whether it is running at the end,
    and whether the client committed again after its first error."""
    if embedded:
        return EMBEDDED
    said = next((words for sign, words in SERVER_SIGNS if any(sign.search(x) for x in log_lines)), "")
    restarted = any(RESTARTED.search(x) for x in log_lines)
    said = said or ("stopped" if restarted else "")
    if said and restarted:
        ready_after = any(READY.search(x) for x in log_lines[next(i for i, x in enumerate(log_lines)
                                                               if RESTARTED.search(x)):])
        back = alive and (ready_after or committed_after)
        return f"{said}, then restarted" + ("" if back else " but did not come back up")
    if said:
        return said + ("" if alive else ", and stayed down")
    return "kept running" if alive else "stopped"


def server_short(said: str) -> str:
    """What the server did in a table's few words (pure): 'stopped (PANIC), then restarted' is 'PANIC, then
    restarted', a server that crashed with its log unwritten 'crashed', and so on; what it did after is kept."""
    for words, short in SERVER_SHORT.items():
        if said.startswith(words):
            return short + said[len(words):]
    return said


class Ended(Enum):
    """How a cell ended."""

    MEASURED = "measured"
    HUNG = "hung"  # it did not end within its time limit
    NOT_RUN = "not run"  # this machine or this pair cannot run it (the reason is in the notes)


@dataclass(frozen=True)
class FaultCell:
    """One cell: a configuration, a database with its settings, a fault plan; and what happened."""

    config: str
    database: str
    settings: str
    fault: str  # the fault's kind (flush, write:wal, ...)
    plan: str  # the fault plan in words
    outcome: Ended
    injected: int = 0  # requests the recorder failed
    counts: Counts | None = None
    behaviour: Behaviour | None = None
    truth: Truth | None = None
    first_error: str = ""  # the first error the client was given
    told_after_s: float | None = None  # from the first injected error to the first error the client was given
    write_back_errors: tuple[str, ...] = ()  # the write-backs the client asked for that failed (the first ones)
    write_back_ok_after_error: bool = False  # and one asked for later succeeded (a checkpoint after a failed one)
    # the user's own command: its acknowledged lines were handed to the user's check, which judged what is there
    # (counts.corruption is what it said when it failed); which acknowledged work was lost is not known
    judged: bool = False
    traits: tuple[str, ...] = ()  # what the configuration's filesystem does that a measured cause needs (fsfacts)
    notes: tuple[str, ...] = field(default_factory=tuple)
    seconds: float = 0.0


def told_after(log: ClientLog, injected: list[int]) -> float | None:
    """Seconds from the first injected error to the first error the client was given at or after it (pure);
    None when the client was never told."""
    if not injected:
        return None
    after = [t for t, _ in log.failed.values() if t >= injected[0]]
    return (min(after) - injected[0]) / 1e9 if after else None


def plural(n: int, one: str, many: str = "") -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def verdict(cell: FaultCell) -> str:
    """The cell in words a DBA reads: what failed, what the server and the filesystem did, what was lost (pure).
    Nothing is called safe: one run with one fault plan is a sample of one."""
    head = f"with {cell.config} and {cell.database} ({cell.settings or 'defaults'})"
    if cell.outcome is Ended.NOT_RUN:
        return f"{head}: not run: {'; '.join(cell.notes)}"
    if cell.outcome is Ended.HUNG:
        head += f": hung: the cell did not end within its time limit ({'; '.join(cell.notes)})"
    if cell.injected == 0:
        return f"{head}: the fault never fired (no matching request came while it was armed), so this says nothing"
    b, c, t = cell.behaviour, cell.counts, cell.truth
    assert b is not None and c is not None and t is not None
    what = f"{plural(cell.injected, 'injected error')}; the server {b.server}; the filesystem {b.filesystem}; "
    when = f", {cell.told_after_s * 1000:,.0f} ms after the first injected one" \
        if cell.told_after_s is not None else ""
    told = (f"the client was given {plural(c.failed, 'error')}{when} (first: {cell.first_error[:120]})" if c.failed
            else "the client was given no error on a commit")
    if cell.judged:
        told = (f"your command failed{when} ({cell.first_error[:120]})" if c.failed
                else "your command ended without an error") + f" after {plural(c.acked, 'acknowledgement')}"
    if cell.write_back_errors:
        told += f"; a write-back it asked for failed ({cell.write_back_errors[0][:120]})" + \
            (", and a later one succeeded" if cell.write_back_ok_after_error else "")
    if not t.came_up:
        return f"{head}: {what}{told}; after restart the database did not come up: {t.problem[:200]}"
    after = (f"after restart {plural(c.acked_lost, 'acknowledged commit')} of {c.acked:,} "
             f"{'was' if c.acked_lost == 1 else 'were'} lost" if c.acked_lost
             else f"after restart none of the {c.acked:,} acknowledged commits was lost")
    if cell.judged:
        after = ("after restart your check, given the acknowledged lines, " +
                 (f"failed: {c.corruption[:200]}" if c.corruption else "passed"))
    extra = []
    if c.false_failures:
        extra.append(f"{plural(c.false_failures, 'commit')} the client was told failed "
                     f"{'was' if c.false_failures == 1 else 'were'} there (false failure)")
    if c.acked_lost and not cell.judged:
        extra += [f"the likely cause, measured by pickfs: {x}" for x in causes_for(cell.database, cell.fault,
                                                                                    cell.traits)]
    if c.old_value:
        extra.append(f"old value: {c.old_value}")
    if c.corruption and not cell.judged:
        extra.append(f"corruption: {c.corruption}")
    if t.fsck_ok is False:
        extra.append(f"fsck: {t.fsck_said[:120]}")
    return f"{head}: {what}{told}; {after}" + "".join(f"; {x}" for x in extra) + \
        " (one run with this fault plan: a sample, not a guarantee)"
