"""A crash test of one configuration and database (or the user's own program): record, rebuild power-cut states, check each.

1. Build the configuration on an image that lives on the recorder; start the database there
   (its durability settings as the workload says); create the tables; sync.
2. Run numbered commits for a while, asking the database every so often to write its pages back
   (a checkpoint, a WAL switch); the client logs each acknowledgement on another filesystem, and
   files created, renamed and removed are noted with their moments. For `command`: the user's
   command runs instead, and may write acknowledgement lines to $PICKFS_ACKS (a pipe pickfs
   timestamps).
3. Stop everything; from the log, make crash states (see states.py); for each: rebuild the image
   as the disk would hold it, mount it (journal replay), open the database (its recovery), list
   the commits present and run its own consistency check (or the user's check command),
   unmount and run the filesystem's fsck. Some states lose power again during that recovery:
   its writes are recorded too, cut, and recovery is run a second time on what is left.
States are built on one working image that the recorder serves, so the writes of each check are
known: a state is the base (which follows the durable writes, each applied once) plus its own
pieces, and after its check exactly what changed is copied back from the base. Where the
filesystem mounts two copies of itself at once, PARALLEL workbenches can check states side by side
(workbenches, check_states; one for now); each checker's commits client stays up for all its states
(client.py) and its mount point and ledger entries are made once (station.py).
Speed is never measured here: the recorder is slow by design.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import queue
import random
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from pickfs import databases
from pickfs.crash import log as wlog
from pickfs.crash.client import Clients, clients
from pickfs.crash.files import FileWatch
from pickfs.crash.identity import Identities
from pickfs.crash.session import Recording, fuse_unavailable, recording, sparse_image
from pickfs.crash.states import (
    DEFAULT_UNIT,
    FIRST_DRAWN,
    LATER_DRAWN,
    Coverage,
    CrashState,
    Event,
    coverage,
    covered,
    generate,
    losses,
    one_image,
    parse_acks,
    parse_events,
    parse_strategies,
    recovery_crash,
    strategy_names,
    when,
    window,
)
from pickfs.crash.states import (
    REGISTRY as STRATEGY_REGISTRY,
)
from pickfs.crash.station import Station
from pickfs.databases.base import CHECK_TIMEOUT_S  # a state's check (recovery done) that takes longer hung
from pickfs.errors import CommandFailed, PickfsError
from pickfs.model import FsConfig, Target, WorkloadSpec
from pickfs.proc import run as run_program
from pickfs.risks import crash_model_gaps
from pickfs.safepaths import open_dir, own_dir
from pickfs.services import service_class
from pickfs.services.base import Endpoint
from pickfs.stack.cleanup import holding
from pickfs.stack.filesystems import SBIN_PATH, fs_type, unavailable_reason
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision
from pickfs.workloads import workload_class
from pickfs.workloads.command import Command, ended_note

CLIENT = "pickfs.clients.commits"
DB_STEM = "commits"
BACKENDS = tuple(name for name, db in databases.DATABASES.items() if db.crash_testable)
PROGRAM = "command"  # the backend name of a workload that checks itself (the user's own program)
WRITE_BACK_EVERY_S = 0.5  # how often the commits client asks for a checkpoint / WAL switch / page flush
UNSEEN = ("what no simulation can show: a drive or controller that acknowledges a flush it has not done "
          "(its cache without power-loss protection, or firmware that lies), writes torn below the unit, "
          "bit rot and misdirected writes, and a crash of the host itself while the recorder logs")


def model_text(unit: int, recovery_share: float, strategies: tuple[str, ...] = ()) -> str:
    """The crash model in force, in one statement (pure); `strategies` empty: every registered one."""
    strategies = strategies or strategy_names()
    unit_text = f"{unit // 1024} KiB" if unit % 1024 == 0 else f"{unit} B"
    recovery = (f"about {round(recovery_share * 100)}% of states lose power again during recovery "
                "(journal replay, database recovery and the check that follows), which is then run again"
                if recovery_share > 0
                else "no state loses power again during recovery")
    return (f"worst-case disk (the volatile write cache of a drive without power-loss protection): a power cut "
            f"keeps every write before the last completed flush (a FUA write "
            f"counts once it completes) and, of the writes after it, a subset of {unit_text} units, in any "
            f"order, so one write can be torn; the subsets tried: {'; '.join(STRATEGY_REGISTRY[s].text for s in strategies)}; "
            f"crash moments at random over the whole run (a third of the first states and {LATER_DRAWN:.0%} of those a "
            f"budget adds: the sample a bound counts), and just before the flushes of the flush "
            f"epochs not covered yet, those overwriting the most of what was written earlier first, and those after "
            f"checkpoints, WAL switches and files created or renamed (where the "
            f"tearing and reordering subsets are tried first, an epoch's overwriting multi-unit writes torn first); "
            f"{recovery}; the "
            f"state when the workload began is taken as on disk (a drive with power-loss protection does better)")


MODEL = model_text(DEFAULT_UNIT, 0.25)


def crash_unavailable(config: FsConfig, spec: WorkloadSpec) -> str | None:
    backend = backend_of(spec)
    if not fs_type(config.fstype).on_block_device:
        return f"a crash test needs a filesystem on a block device, not {config.fstype}"
    if backend is None:
        return f"{spec.name} has no database to crash-test"
    if backend == PROGRAM and not spec.get("check"):
        return "a crash test of your own command needs its check: --set check='CMD' (exit status 0 = consistent)"
    reason = unavailable_reason(config.fstype)
    if reason:
        return reason
    if backend not in (*BACKENDS, PROGRAM):
        return f"crash tests do not cover {backend}"
    return _database_unavailable(backend) or fuse_unavailable()


def _database_unavailable(backend: str) -> str | None:
    """What the crash test itself needs of the database: the embedded engine's libraries (a server's own
    absence is reported when the server starts, as it was before the databases had adapters)."""
    db = databases.known(backend)
    return db.unavailable_reason() if db is not None and db.service is None else None


def backend_of(spec: WorkloadSpec) -> str | None:
    """What a crash test drives: a database the commits client knows, or the user's own program."""
    cls = workload_class(spec.name)
    return PROGRAM if cls.checks_itself else cls.database_for(spec)


@dataclass(frozen=True)
class StateResult:
    index: int
    mode: str
    cut: int
    dropped: int  # unflushed units lost
    mounted: bool
    fsck_ok: bool | None
    db_opened: bool
    consistent: bool | None
    lost: int
    lost_seconds: float
    acked_before: int
    problem: str = ""
    seconds: float = 0.0
    units: int = 0  # unflushed units at the cut
    torn: int = 0  # writes of which only some units landed
    at_s: float = 0.0  # seconds into the workload
    when: str = ""  # when in the run, and after what
    why: str = ""  # how the moment was chosen
    recovery: str = ""  # a second power cut during recovery: where, and how the first recovery went
    kept_as: str = ""  # where the state's image was kept for inspection
    drawn: bool = False  # cut at a random moment: one of the sample the bound counts (else targeted: coverage)
    same_as: int = -1  # the earlier state whose image was identical, checked once for both (-1: checked itself)

    @property
    def distinct(self) -> bool:
        return self.same_as < 0

    @property
    def failed(self) -> bool:
        return bool(self.lost) or not self.mounted or (self.mounted and not self.db_opened) \
            or self.consistent is False


@dataclass(frozen=True)
class CrashResult:
    backend: str
    commits: int  # acknowledged during the recording
    records: int
    flushes: int  # flushes the device sent while the workload ran
    states: tuple[StateResult, ...]
    record_seconds: float
    model: str = MODEL
    unseen: str = UNSEEN
    unit: int = DEFAULT_UNIT
    recovery_share: float = 0.25
    check_seconds: float = 0.0  # building and checking every state
    build_seconds: float = 0.0  # of which building the images
    events: tuple[str, ...] = ()  # what the workload did when (the first ones)
    not_exercised: tuple[str, ...] = ()  # settings whose risk this model could not exercise, and why
    notes: tuple[str, ...] = ()  # what else happened: processes a command left running, ended
    budget_s: float = 0.0  # the checking time it had (0: a number of states, no budget)
    stopped: str = ""  # why it stopped before its budget ended (a clear answer)
    coverage: Coverage | None = None  # what of the recording this attempt's states covered

    def metrics(self) -> dict[str, float]:
        s = self.states
        return {
            "crash_states": float(len(s)),
            "crash_states_lost": float(sum(1 for x in s if x.lost)),
            "crash_max_lost": float(max((x.lost for x in s), default=0)),
            "crash_max_lost_s": float(max((x.lost_seconds for x in s), default=0.0)),
            "crash_unmountable": float(sum(1 for x in s if not x.mounted)),
            "crash_fsck_failed": float(sum(1 for x in s if x.fsck_ok is False)),
            "crash_db_failed": float(sum(1 for x in s if x.mounted and not x.db_opened)),
            "crash_inconsistent": float(sum(1 for x in s if x.consistent is False)),
            "crash_commits": float(self.commits),
            "crash_flushes": float(self.flushes),
            "crash_s_per_state": sum(x.seconds for x in s) / len(s) if s else 0.0,
            "crash_states_per_s": len(s) / self.check_seconds if self.check_seconds > 0 else 0.0,
            "crash_build_s": self.build_seconds,
            "crash_check_s": self.check_seconds,
            "crash_torn_states": float(sum(1 for x in s if x.torn)),
            "crash_recovery_states": float(sum(1 for x in s if x.recovery)),
            "crash_distinct_states": float(sum(1 for x in s if x.distinct)),  # each checked once
            "crash_distinct_per_s": sum(1 for x in s if x.distinct) / self.check_seconds if self.check_seconds > 0
            else 0.0,
            # the sample a bound counts: distinct states cut at random moments
            "crash_drawn_states": float(sum(1 for x in s if x.drawn and x.distinct)),
            "crash_drawn_failed": float(sum(1 for x in s if x.drawn and x.distinct and x.failed)),
            "crash_budget_s": self.budget_s,
            **({"crash_epochs": float(self.coverage.epochs), "crash_epochs_covered": float(self.coverage.epochs_covered),
                "crash_overwrites": float(self.coverage.overwrites),
                "crash_overwrites_torn": float(self.coverage.overwrites_torn)} if self.coverage else {}),
            "crash_stopped_early": float(bool(self.stopped)),
        }

    def as_json(self) -> str:
        return json.dumps(asdict(self))


HUNG = {"query_error": f"the database did not answer its check within {CHECK_TIMEOUT_S} s: it hung"}


def _client(step: str, backend: str, datadir: Path, endpoint: Endpoint | None, settings: dict[str, Any],
            extra: tuple[str, ...] | list[str] = (), standing: Clients | None = None) -> dict[str, Any]:
    """One step of the commits client; a check by a client that stays up (`standing`), given its environment (an
    embedded engine's lock files in the checker's own directory, off the state's filesystem), or a process of its
    own."""
    db = databases.get(backend)
    options = ["--backend", backend, *db.connection_args(datadir, endpoint, settings, DB_STEM)]
    argv = [sys.executable, "-m", CLIENT, step, *options]
    standing = standing if step == "check" else None
    env = db.client_env(datadir, None, endpoint) if standing is None else db.checker_env(datadir, standing.home,
                                                                                        endpoint)
    if standing is not None:
        # a damaged database can make a query wait for ever (PostgreSQL on a transaction its lost commit
        # log calls running): a state whose check hangs is broken, and the test goes on
        doc: dict[str, Any] = standing.ask(backend, env, [*options, *extra], CHECK_TIMEOUT_S) or dict(HUNG)
    else:
        try:
            out = run_program([*argv, *extra], timeout=CHECK_TIMEOUT_S if step == "check" else 3600, env=env).text
        except CommandFailed as exc:
            if step != "check" or exc.returncode != -1:
                raise
            return dict(HUNG)
        if step == "load":
            db.after_load(datadir, endpoint, env, settings, DB_STEM)
        doc = json.loads(out.strip().splitlines()[-1])
    if step == "check" and "own_check" in doc:
        errors, warnings = db.outside_check(datadir, DB_STEM, env)
        if errors:
            doc["own_check"] = f"gfix -v: {'; '.join(errors)}"
        elif warnings:
            doc["warnings"] = f"gfix -v warnings (not errors): {'; '.join(warnings)}"
    return doc


def _server(backend: str, datadir: Path, settings: dict[str, Any], ledger: Ledger, rundir: Path,
            fresh: bool, discarded: bool = False) -> AbstractContextManager[Endpoint | None]:
    """The database's server, where it has one. `discarded`: a state's check whose writes nothing reads after it
    (see `discarded_check`): started with the database's settings for such a check, ended at once after it."""
    db = databases.get(backend)
    if db.service is None:  # embedded: the client process is the database
        return nullcontext(None)
    return service_class(db.service).start(datadir, db.discarded_check_settings(settings) if discarded else settings,
                                           ledger, rundir, fresh=fresh, at_once=discarded)


def fsck(fstype: str, device: str) -> tuple[bool | None, str]:
    """The filesystem's own check, read-only: (clean?, what it said); None when there is no checker."""
    check = fs_type(fstype).checker()
    try:
        proc = subprocess.run([*check.argv, device], capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PATH": SBIN_PATH})
    except FileNotFoundError:
        return None, f"{check.argv[0]} is not installed"
    return proc.returncode == 0, check.findings(proc.stdout + proc.stderr)


# --- what runs during the recording, and what checks a state: the commits client, or the user's program ---
class Commits:
    """The commits client on a database pickfs knows: numbered commits, acks, write-backs, its check."""

    def __init__(self, backend: str, settings: dict[str, Any]) -> None:
        self.backend, self.settings = backend, settings

    def named(self, r: StateResult) -> StateResult:
        """A failed state's result with the cause pickfs traced to the database itself named in its problem, where
        one fits (`Database.crash_cause`)."""
        cause = databases.get(self.backend).crash_cause(r.problem, self.settings, r.torn) if r.failed else ""
        if not cause:
            return r
        return replace(r, problem="; ".join(x for x in (r.problem, f"the likely cause, measured by pickfs: {cause}")
                                            if x))

    def server(self, datadir: Path, ledger: Ledger, rundir: Path, fresh: bool,
               discarded: bool = False) -> AbstractContextManager[Endpoint | None]:
        return _server(self.backend, datadir, self.settings, ledger, rundir, fresh, discarded)

    def load(self, datadir: Path, endpoint: Endpoint | None) -> None:
        _client("load", self.backend, datadir, endpoint, self.settings)

    def run(self, datadir: Path, endpoint: Endpoint | None, base: Path, duration: float, seed: int) -> None:
        _client("run", self.backend, datadir, endpoint, self.settings,
                ["--acks", str(base / "acks.log"), "--duration", str(duration), "--seed", str(seed),
                 "--events", str(base / "events.log"), "--checkpoint-every", str(WRITE_BACK_EVERY_S)])

    def check(self, datadir: Path, endpoint: Endpoint | None, base: Path, acks: dict[int, int],
              t_cut: int, standing: Clients | None = None,
              discarded: bool = False) -> tuple[bool, bool | None, set[int] | None, str]:
        """(opened, consistent, commits present or None when not known, problem); `standing`: client processes that
        stay up (client.py), where the database allows it, instead of one process per check; `discarded`: nothing
        reads what the check makes durable (an embedded engine opened with its settings for such a check)."""
        settings = databases.get(self.backend).discarded_check_settings(self.settings) if discarded else self.settings
        doc = _client("check", self.backend, datadir, endpoint, settings, standing=standing)
        if "open_error" in doc or "query_error" in doc:
            # the commits read before a later query failed (a damaged accounts table) are there: damage, not loss
            opened = "open_error" not in doc
            said = f"database: {doc.get('open_error') or doc.get('query_error')}"
            return opened, (False if opened else None), set(doc.get("present", ())), said
        bad = [x for x in (doc["own_check"], doc["invariant"]) if x != "ok"]
        return True, not bad, set(doc["present"]), "; ".join([*bad, *([doc["warnings"]] if doc.get("warnings") else [])])


class Program:
    """The user's own command: it runs as the `command` workload does, and their check judges each state."""

    def __init__(self, spec: WorkloadSpec, workdir: Path) -> None:
        self.spec, self.workload = spec, Command(workdir / "data")  # its ledger: the work directory's
        self.service = spec.get("server") or None
        self.settings = dict(Command.service_settings(spec))
        self.ended: list[str] = []  # what the command and its checks left running, ended after them

    def server(self, datadir: Path, ledger: Ledger, rundir: Path, fresh: bool,
               discarded: bool = False) -> AbstractContextManager[Endpoint | None]:
        """The user's server, started and stopped as always (`discarded` is for the commits client: the user's
        check may want what the server writes back as it stops)."""
        if not self.service:
            return nullcontext(None)
        return service_class(self.service).start(datadir, self.settings, ledger, rundir, fresh=fresh)

    def load(self, datadir: Path, endpoint: Endpoint | None) -> None:
        self.workload.prepare(self.spec, datadir, endpoint)

    def run(self, datadir: Path, endpoint: Endpoint | None, base: Path, duration: float, seed: int) -> None:
        fifo = base / "acks.fifo"
        os.mkfifo(fifo, 0o666)
        with acks_from(fifo, base / "acks.log"):
            env = {**dict(self.spec.get("env") or {}), "PICKFS_ACKS": str(fifo)}
            spec = replace(self.spec, settings=tuple({**dict(self.spec.settings), "env": env}.items()))
            raw = self.workload.run(spec, datadir, endpoint)
        self.ended.extend(json.loads(raw.text).get("ended") or [])

    def check(self, datadir: Path, endpoint: Endpoint | None, base: Path, acks: dict[int, int],
              t_cut: int, standing: Clients | None = None,
              discarded: bool = False) -> tuple[bool, bool | None, set[int] | None, str]:
        """The user's check, their own program, run per state (`standing` and `discarded` are for the commits
        client)."""
        owed = base / "acks-owed.txt"
        write_owed(base / "acks.log", owed, t_cut)
        env = {**dict(self.spec.get("env") or {}), "PICKFS_ACKS": str(owed)}
        spec = replace(self.spec, settings=tuple({**dict(self.spec.settings), "env": env,
                                                  "command": self.spec.get("check")}.items()))
        try:
            doc = self.workload.execute("check", self.spec.get("check"), spec, datadir, endpoint)
        except PickfsError as exc:
            return True, False, None, f"check: {exc.message}"[:400]
        self.ended.extend(doc.get("ended") or [])
        return True, True, None, ""

    def notes(self) -> tuple[str, ...]:
        return (ended_note(self.ended),) if self.ended else ()


@contextmanager
def acks_from(fifo: Path, out: Path) -> Iterator[None]:
    """Read lines from a pipe in a thread, each written to `out` prefixed with the moment it arrived."""
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # O_RDWR: writers come and go without an end of file
    stop = threading.Event()

    def pump() -> None:
        buf = b""
        with open(out, "ab") as dst:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    chunk = b""
                if not chunk:
                    if stop.is_set():
                        break
                    time.sleep(0.005)
                    continue
                now = time.monotonic_ns()
                buf += chunk
                *lines, buf = buf.split(b"\n")
                dst.writelines(b"%d %s\n" % (now, line) for line in lines)
                dst.flush()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        os.close(fd)


def driver_for(spec: WorkloadSpec, workdir: Path) -> Commits | Program:
    backend = backend_of(spec)
    if backend == PROGRAM:
        return Program(spec, workdir)
    return Commits(str(backend), dict(spec.settings))


@dataclass(frozen=True)
class Outcome:
    """What checking one image found, before it is set against the commits acknowledged before its cut."""

    mounted: bool
    fsck_ok: bool | None
    db_opened: bool
    consistent: bool | None
    present: frozenset[int] | None  # the commits found; None: the user's program, whose check judges
    problem: str


def check_image(config: FsConfig, image: Path, work: Path, ledger: Ledger, driver: Commits | Program,
                acks: dict[int, int], state: CrashState, run_fsck: bool = True,
                standing: Clients | None = None, station: Station | None = None, discarded: bool = False) -> Outcome:
    """Mount the crash image (journal replay), recover the database, list the commits present, fsck. `standing`: the
    checker's client processes that stay up (None: a client process per check); `station`: the checker's mount
    point, ledger entries and loop device, made once (None: made for this state alone, at `work`/mnt-N, and undone
    after it, its loop device with direct I/O: the check as it was, the reference the kept comparison holds the
    checker's stations to); `discarded`: nothing reads what the check makes durable (`discarded_check`)."""
    with ExitStack() as stack:
        here = station or Station(stack, ledger, config, image, work / f"mnt-{state.index}", direct_io=True)
        mounted, opened, problem = False, False, ""
        consistent: bool | None = None
        clean: bool | None = None
        present: set[int] | None = set()
        with here.attached() as device:
            with here.mounted(device) as refused:
                if refused:
                    problem = refused
                else:
                    mounted = True
                    opened, consistent, present, problem = _recovered(driver, here.mountpoint / "pickfs-data", ledger,
                                                                      work, acks, state, standing, discarded)
            # a filesystem still held after its unmount lives on, and fsck would read it half written
            held = here.let_go(device) if mounted else ""
            problem = "; ".join(x for x in (problem, held) if x)
            if run_fsck:
                clean, said = fsck(config.fstype, device)
                if clean is False:
                    problem = "; ".join(x for x in (problem, f"fsck: {said}") if x)
    return Outcome(mounted, clean, opened, consistent, None if present is None else frozenset(present), problem)


def _recovered(driver: Commits | Program, datadir: Path, ledger: Ledger, work: Path, acks: dict[int, int],
               state: CrashState, standing: Clients | None,
               discarded: bool = False) -> tuple[bool, bool | None, set[int] | None, str]:
    """The database started on the mounted state (its recovery) and checked: (opened, consistent, present, problem).
    `discarded`: nothing reads what the check makes durable: a server is started as the database allows for such a
    check and ended at once after it (PostgreSQL: fsync off, an immediate shutdown)."""
    opened, problem = False, ""
    consistent: bool | None = None
    present: set[int] | None = set()
    try:
        with driver.server(datadir, ledger, work / "run", fresh=False, discarded=discarded) as endpoint:
            opened, consistent, present, problem = driver.check(datadir, endpoint, work, acks, state.t_ns, standing,
                                                                discarded)
    except PickfsError as exc:
        problem = f"database would not start: {exc.one_line()}"[:400]
    return opened, consistent, present, problem


def discarded_check(state: CrashState, keep: Path | None) -> bool:
    """Nothing reads what the state's check makes durable (pure): the check is done when its server stops, fsck reads
    the filesystem after the unmount (which writes back whatever the server wrote), and the state is undone from the
    base; unless its recovery loses power again (that recovery's writes and flushes are the second state) or a
    failing state's image is kept for inspection (kept as the check left it, its server stopped as always)."""
    return not state.recovery and keep is None


def judged(state: CrashState, acks: dict[int, int], out: Outcome, seconds: float) -> StateResult:
    """A state's result: what its image's check found, against the commits acknowledged before its cut (pure)."""
    acked = sum(1 for t in acks.values() if t < state.t_ns)
    if out.present is None:  # the user's program: its check says whether anything is missing
        lost, lost_s = 0, 0.0
    else:
        loss = losses(acks, set(out.present) if out.db_opened else set(), state.t_ns)
        lost, lost_s = len(loss.lost), loss.seconds
    return StateResult(index=state.index, mode=state.mode, cut=state.cut, dropped=state.dropped, mounted=out.mounted,
                       fsck_ok=out.fsck_ok, db_opened=out.db_opened, consistent=out.consistent, lost=lost,
                       lost_seconds=lost_s, acked_before=acked, problem=out.problem, seconds=seconds,
                       units=state.units, torn=state.torn, why=state.why, drawn=state.drawn)


def check_state(config: FsConfig, image: Path, work: Path, ledger: Ledger, driver: Commits | Program,
                acks: dict[int, int], state: CrashState, run_fsck: bool = True,
                standing: Clients | None = None, station: Station | None = None) -> StateResult:
    """Mount the crash image (journal replay), recover the database, count what is missing, fsck."""
    t0 = time.monotonic()
    out = check_image(config, image, work, ledger, driver, acks, state, run_fsck, standing, station)
    return judged(state, acks, out, time.monotonic() - t0)


def copy_image(src: Path, dst: Path) -> None:
    """A copy of an image: copy-on-write where the filesystem can (xfs, btrfs), else its data only (holes skipped)."""
    subprocess.run(["cp", "--reflink=auto", "--sparse=always", str(src), str(dst)], check=True)


def kept_images_only(names: list[str]) -> bool:
    """A directory holding only kept state images: one an earlier pickfs filled, before it marked its directories."""
    return all(n.endswith(".img") and not n.startswith(".") for n in names)


def keep_image(src: Path, keep: Path, name: str) -> Path:
    """A failing state's image kept in the user's `keep` directory, readable by root only.

    The directory is made 0700 or proven pickfs's own (safepaths.own_dir: no other user's link on the way,
    not a directory of the user's that holds something); the copy goes to a fresh file made with O_EXCL in
    the directory held open, and is renamed into place there, so nothing planted under the image's
    predictable name, or swapped in on the way to the directory, is followed or overwritten through."""
    real = own_dir(keep, "--keep-states", 0o700, made=kept_images_only)
    with open_dir(real, "--keep-states") as dfd:
        tmp = f".keeping-{os.getpid()}-{name}"
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=dfd))
        try:
            copy_image(src, Path(f"/proc/{os.getpid()}/fd/{dfd}/{tmp}"))  # the directory held open
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    return real / name


def copy_ranges(src: Path, dst: Path, spans: Sequence[tuple[int, int]]) -> None:
    """The (offset, length) ranges of `dst` made what they are in `src` (zeros beyond its data), each once."""
    merged: list[list[int]] = []
    for off, n in sorted(spans):
        if merged and off <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], off + n)
        else:
            merged.append([off, off + n])
    fd_src = os.open(src, os.O_RDONLY)
    fd = os.open(dst, os.O_RDWR)
    try:
        for start, end in merged:
            pos = start
            while pos < end:
                chunk = os.pread(fd_src, min(end - pos, 1 << 20), pos)
                if not chunk:  # beyond the source's data: zeros
                    chunk = b"\0" * min(end - pos, 1 << 20)
                os.pwrite(fd, chunk, pos)
                pos += len(chunk)
    finally:
        os.close(fd)
        os.close(fd_src)


class Workbench:
    """One working image, served by the recorder, so that every write a check makes is known and undone.

    A state is the base (which follows the durable writes: each applied once) plus its own pieces;
    after its check, exactly the ranges the pieces and the check changed are copied back from the
    base. Nothing is copied whole per state.
    """

    def __init__(self, log: Path, records: list[wlog.Record], base: Path, first: int, served: Recording) -> None:
        self.log, self.records, self.base, self.at, self.served = log, records, base, first, served
        self.at_first = first
        self.dirty: list[tuple[int, int]] = []
        self.advanced: list[tuple[int, int]] = []  # what the durable writes changed since the start image
        self.seconds = 0.0

    @property
    def image(self) -> Path:
        """The working image as the loop device sees it (through the recorder)."""
        return self.served.image

    def advance(self, state: CrashState) -> None:
        """The base and the working image advanced to the state's durable writes (not its own pieces)."""
        t0 = time.monotonic()
        if state.durable < self.at:
            raise ValueError("crash states must come in the order of their cuts")
        durable = [wlog.Piece(i) for i in range(self.at, state.durable)]
        for image in (self.base, self.served.backing):
            wlog.apply_pieces(self.log, self.records, durable, image)
        self.advanced += wlog.ranges(self.records, durable)
        self.at = state.durable
        self.seconds += time.monotonic() - t0

    def rewind(self, pristine: Path) -> None:
        """The base and the working image back to the start image (`pristine`, a copy of it), for another batch of
        states from the start of the run: the ranges the durable writes changed copied back."""
        t0 = time.monotonic()
        first = self.at_first
        for image in (self.base, self.served.backing):
            copy_ranges(pristine, image, self.advanced)
            if os.path.getsize(image) != os.path.getsize(pristine):  # a truncation in the log
                os.truncate(image, os.path.getsize(pristine))
        self.advanced, self.at = [], first
        self.seconds += time.monotonic() - t0

    def prepare(self, state: CrashState) -> None:
        """The working image as the state's disk: the base advanced to its durable writes, then its pieces."""
        self.advance(state)
        t0 = time.monotonic()
        self.add(self.log, self.records, state.kept)
        self.seconds += time.monotonic() - t0

    def add(self, log: Path, records: list[wlog.Record], pieces: Any) -> None:
        pieces = list(pieces)
        wlog.apply_pieces(log, records, pieces, self.served.backing)
        self.dirty += wlog.ranges(records, pieces)

    def checked(self) -> list[wlog.Record]:
        """The writes and flushes the last check sent (the working image holds them), from the recorder's log."""
        # The recorder buffers its log and writes it out at a flush or a close; a filesystem mounted without
        # barriers sends no flush, and the loop device's detach is no close. Closing a descriptor of the image
        # is one (FUSE's flush request, answered before close returns): without it the tail of a check's
        # writes would be missing here, never undone, and leak into the next states.
        os.close(os.open(self.served.image, os.O_RDONLY))
        found = wlog.read_log(self.served.log)
        self.dirty += wlog.ranges(found, [wlog.Piece(i) for i in range(len(found))])
        return found

    def reset(self, forget_log: bool = True) -> None:
        """The working image back to the base: the changed ranges copied back; the recorder's log emptied."""
        t0 = time.monotonic()
        copy_ranges(self.base, self.served.backing, self.dirty)
        self.dirty = []
        if forget_log:
            os.truncate(self.served.log, 0)  # the recorder appends; it is idle between checks
        self.seconds += time.monotonic() - t0


def _recover_twice(config: FsConfig, bench: Workbench, st: CrashState, base: Path, ledger: Ledger,
                   driver: Commits | Program, acks: dict[int, int], rng: random.Random, unit: int,
                   standing: Clients | None = None, station: Station | None = None) -> StateResult:
    """Recover the state (its writes recorded), cut that recovery's writes, and recover what is left."""
    first = check_state(config, bench.image, base, ledger, driver, acks, st, False, standing, station)
    recovery = bench.checked()
    cut, pieces, dropped = recovery_crash(recovery, unit, rng)
    bench.reset(forget_log=False)  # the recovery's writes are still in the log: applied next, in part
    bench.add(bench.log, bench.records, st.kept)
    bench.add(bench.served.log, recovery, pieces)
    os.truncate(bench.served.log, 0)
    second = check_state(config, bench.image, base, ledger, driver, acks, st, True, standing, station)
    said = (f"lost {first.lost:,} acknowledged commits" if first.lost else "would not mount" if not first.mounted
            else "the database would not open" if not first.db_opened else "inconsistent" if first.consistent is False
            else "recovered")
    return replace(second, recovery=f"power failed again after {cut:,} of the {len(recovery):,} writes and flushes of "
                                    f"recovery and its check ({dropped:,} unflushed units lost); the first "
                                    f"recovery: {said}")


@dataclass(frozen=True)
class Recorded:
    """What a crash test's checks need of its recording (its files under `base`, removed with it)."""

    base: Path
    log: Path  # the recorder's log of the workload's writes and flushes
    records: list[wlog.Record]
    first: int  # the window of records that arrived while the workload ran: [first, last)
    last: int
    t_start: int
    t_end: int
    acks: dict[int, int]
    events: list[Event]
    start_image: Path  # the image as the workload began
    size: int
    seconds: float  # the recording took


def _record(config: FsConfig, driver: Commits | Program, backend: str, base: Path, ledger: Ledger, size: int,
            duration: float, seed: int) -> Recorded:
    """Run the workload on the recorder once; its log, acknowledgements, events and start image (under `base`)."""
    t0 = time.monotonic()
    with recording(base, size, ledger) as rec:
        target = Target(kind="image", workdir=str(base), size_bytes=size)
        with provision(config, target, ledger, image=rec.image) as prov:
            with driver.server(prov.datadir, ledger, base / "run", fresh=True) as endpoint:
                driver.load(prov.datadir, endpoint)
                os.sync()
                watch = FileWatch(prov.datadir).start()
                t_start = time.monotonic_ns()
                try:
                    driver.run(prov.datadir, endpoint, base, duration, seed)
                finally:
                    t_end = time.monotonic_ns()
                    file_events = watch.stop()
    record_s = time.monotonic() - t0
    records = wlog.read_log(rec.log)
    acks_log = base / "acks.log"
    if backend == PROGRAM:  # the pipe's lines, "arrival-ns line": owed once arrived
        acks = dict(enumerate(arrivals(acks_log)))
    else:
        acks = parse_acks(acks_log.read_text())
    events_path = base / "events.log"
    events = sorted([*(parse_events(events_path.read_text()) if events_path.exists() else []), *file_events],
                    key=lambda e: e.t_ns)
    first, last = window(records, t_start, t_end)
    start_image = base / "start.img"
    sparse_image(start_image, size)
    wlog.apply(rec.log, records[:first], start_image)
    os.unlink(rec.backing)  # the final state is not needed; keep the disk use down
    return Recorded(base, rec.log, records, first, last, t_start, t_end, acks, events, start_image, size, record_s)


@contextmanager
def recorded(config: FsConfig, spec: WorkloadSpec, workdir: Path, ledger: Ledger, size: int = 512 * 1024**2,
             duration: float = 3.0, seed: int = 1, driver: Commits | Program | None = None) -> Iterator[Recorded]:
    """The workload recorded once (by `driver`, else a new one), its files removed on exit."""
    backend = backend_of(spec)
    if backend is None:
        raise PickfsError(f"{spec.name} has no database to crash-test", "pick another workload for the crash test")
    base = workdir / "crash" / uuid.uuid4().hex[:12]
    with holding(ledger, "dir", path=str(base), recursive=True):
        try:
            yield _record(config, driver or driver_for(spec, workdir), backend, base, ledger, size, duration, seed)
        finally:
            shutil.rmtree(base, ignore_errors=True)


# States checked at once where they can be: two workbenches. The fast check once gave a state an fsck verdict the
# one-at-a-time reference did not (tests/integration/test_crash_fast_check.py): a mount namespace another program made
# while the state was mounted (unshare --mount, ip netns exec) kept a copy of its mount, so the filesystem outlived its
# unmount and fsck read it half written; a station now unmounts such copies (Station.let_go).
PARALLEL = 2


def workers_for(backend: str, fstype: str) -> int:
    """How many states are checked at once: PARALLEL where the filesystem mounts two copies of itself at once
    (FsType.clones_mount_together: the workbenches' images are copies of one filesystem, its UUID too; a station
    mounts them with the type's clone_mount_options, xfs's nouuid), each
    check then on its own image, mount, client process and server (each server its own socket directory, or a
    free port); else one. The user's own program: one (its check reads files of the test's own)."""
    return PARALLEL if backend != PROGRAM and fs_type(fstype).clones_mount_together else 1


@contextmanager
def workbenches(rec: Recorded, ledger: Ledger, workers: int, rewinds: bool) -> Iterator[tuple[list[Workbench], Path]]:
    """One workbench per worker, each its own base image, working image and recorder, all at the start image (left
    as it is); with the start image's pristine copy (`rewinds`: for batches that start again; else not made).
    Their files are in a directory of their own under the recording's, removed on exit."""
    here = rec.base / f"benches-{uuid.uuid4().hex[:8]}"
    here.mkdir(mode=0o700)
    pristine = here / "pristine.img"
    if rewinds:
        copy_image(rec.start_image, pristine)
    bases = [here / f"base-{k}.img" for k in range(workers)]
    working = [here / f"working-{k}.img" for k in range(workers)]
    for image in (*bases, *working):
        copy_image(rec.start_image, image)  # the only whole copies: states are built on them and undone
    try:
        with ExitStack() as stack:
            benches = []
            for k in range(workers):
                served = stack.enter_context(recording(here / f"checks-{k}", rec.size, ledger, image=working[k]))
                benches.append(Workbench(rec.log, rec.records, bases[k], rec.first, served))
            yield benches, pristine
    finally:
        shutil.rmtree(here, ignore_errors=True)


def dealt(states: Sequence[CrashState], identities: Sequence[int | None],
          n: int) -> list[list[tuple[CrashState, int | None]]]:
    """The states dealt out to n checkers, in order: every state of one identity to the same checker, the distinct
    ones in turn (pure)."""
    owner: dict[int, int] = {}
    queues: list[list[tuple[CrashState, int | None]]] = [[] for _ in range(n)]
    turn = 0
    for st, identity in zip(states, identities):
        if identity is not None and identity in owner:
            k = owner[identity]
        else:
            k, turn = turn, (turn + 1) % n
            if identity is not None:
                owner[identity] = k
        queues[k].append((st, identity))
    return queues


def check_states(checkers: Sequence[StateChecker], states: Sequence[CrashState], identities: Sequence[int | None],
                 halt: threading.Event,
                 ended: Callable[[StateResult], None] = lambda r: None) -> Iterator[StateResult]:
    """Each state checked by one of the checkers, its result yielded as soon as it is known; none started once
    `halt` is set. One checker: in this thread, in order. More: one thread each, every state of one identity on
    the same checker (so a duplicate finds its first check done), the distinct ones dealt out in turn; results in
    the order of the states (one that ends early waits for those before it). `ended`: called in this thread with
    each result the moment its check ends, in whatever order they end (before it is yielded), so that a stop can
    be judged on every result in hand while a slow state holds the yielded ones back; once halted, every result
    that ended is still yielded. A worker's error is raised here once the others have stopped."""
    if len(checkers) == 1:
        for st, identity in zip(states, identities):
            if halt.is_set():
                return
            r = checkers[0].check(st, identity)
            ended(r)
            yield r
        return
    yield from _in_threads(checkers, states, identities, halt, ended)


def _in_threads(checkers: Sequence[StateChecker], states: Sequence[CrashState], identities: Sequence[int | None],
                halt: threading.Event,
                ended: Callable[[StateResult], None] = lambda r: None) -> Iterator[StateResult]:
    """check_states with one thread per checker."""
    queues = dealt(states, identities, len(checkers))
    place = {id(st): k for k, st in enumerate(states)}
    done: queue.Queue[tuple[int, StateResult | None, BaseException | None]] = queue.Queue()

    def work(checker: StateChecker, mine: list[tuple[CrashState, int | None]]) -> None:
        try:
            for st, identity in mine:
                if halt.is_set():
                    break
                done.put((place[id(st)], checker.check(st, identity), None))
        except BaseException as exc:  # handed to the consuming thread, raised there
            halt.set()
            done.put((-1, None, exc))
        finally:
            done.put((-1, None, None))

    threads = [threading.Thread(target=work, args=(c, q), daemon=True) for c, q in zip(checkers, queues)]
    for t in threads:
        t.start()
    error: BaseException | None = None
    waiting: dict[int, StateResult] = {}  # ended, held back until the states before them have ended too
    at = 0  # results are handed on in the order of the states: what is saved is always a first part of them
    try:
        running = len(threads)
        while running:
            k, r, exc = done.get()
            if r is not None:
                ended(r)  # judged the moment it ends, whatever is still being checked before it
                waiting[k] = r
                while at in waiting:
                    yield waiting.pop(at)
                    at += 1
            elif exc is not None:
                error = error or exc
            else:
                running -= 1
        if error is None:
            yield from (waiting[k] for k in sorted(waiting))  # halted: those checked after a state never started
    finally:
        halt.set()  # a consumer that stops early, or a Ctrl-C: the workers end after the state each is checking
        for t in threads:
            t.join()
    if error is not None:
        raise error


def crash_test(config: FsConfig, spec: WorkloadSpec, workdir: Path, ledger: Ledger, n_states: int = 12,
               size: int = 512 * 1024**2, duration: float = 3.0, seed: int = 1,
               progress: Callable[[str], None] = lambda s: None, unit: int = DEFAULT_UNIT,
               recovery_share: float = 0.25, keep: Path | None = None, strategies: str = "",
               kept: tuple[StateResult, ...] = (),
               checked: Callable[[StateResult], None] = lambda r: None, budget_s: float = 0.0,
               clear: Callable[[int, int], bool] = lambda failed, n: False, workers: int = 0,
               goal: int = 0, rules_out: Callable[[int], int] = lambda n: 0) -> CrashResult:
    """Record the workload once, then check `n_states` power-cut states of it, handing each result to `checked`
    as soon as it is known (to be saved). `kept`: states an interrupted attempt checked already (on its own
    recording): only the rest are checked here, numbered after them, and the result holds both.

    `budget_s` > 0: after those, more states in batches (each from the start of the run, sized to what is left
    at the pace so far) until the budget of checking time ends, or `clear(failed, n)` says the distinct states
    cut at random moments, n of them, `failed` lost or damaged something, answer clearly (`_clear_answer`), or
    the states repeat what was checked (`_only_repeats`), or, at the end of a batch, no state failed and the random
    ones rule out a loss in 1 state of `goal` or more (`_at_goal`; `rules_out(n)`: the K of "1 in K" n clean ones
    rule out; `goal` 0: no goal; a batch is sized to end there, `_states_for_goal`), or the recording has one image
    only (`one_image`). The clear answer, the repeats and a batch past its time are judged on every state whose check
    has ended, in the order they end (`check_states`'s `ended`), not held back by a slow state before them; `checked`
    gets them in the order of the states all the same. The first states are a third at random, the later batches'
    `LATER_DRAWN` (states.py). `workers`: states checked at once (0: as many as they can be, `workers_for`)."""
    backend = backend_of(spec)
    reason = crash_unavailable(config, spec)
    if reason or backend is None:
        raise PickfsError(f"unavailable: {reason}", "pick another configuration or workload for the crash test")
    try:
        chosen = parse_strategies(strategies)
    except ValueError as exc:
        raise PickfsError(str(exc), f"use some of: {', '.join(strategy_names())}") from None
    driver = driver_for(spec, workdir)
    workers = workers or workers_for(backend, config.fstype)
    with recorded(config, spec, workdir, ledger, size, duration, seed, driver) as rec:
        records, first, last, acks, events = rec.records, rec.first, rec.last, rec.acks, rec.events
        t_start, t_end = rec.t_start, rec.t_end
        flushes = sum(1 for r in records[first:last] if r.kind == wlog.FLUSH)
        single = one_image(records, first, last) and backend != PROGRAM
        after = len(kept)  # the states checked before an interruption come first
        results = list(kept)
        ended = list(kept)  # the same states in the order their checks ended (a budget's stop is judged on these)
        stopped = ""
        tried: list[CrashState] = []  # this attempt's states, for what of the recording they covered
        with workbenches(rec, ledger, workers, budget_s > 0) as (benches, pristine), ExitStack() as stack:
            t_check = time.monotonic()
            deadline = t_check + budget_s - sum(r.seconds for r in kept)
            checkers = checkers_for(config, rec, ledger, driver, benches, stack, seed, unit, keep,
                                    f"{config.name}-{spec.label}")
            identities = None if backend == PROGRAM else Identities(rec.log, records, first)
            batch, n_batch = 0, max(0, n_states - after)
            if not n_batch and budget_s > 0:  # resumed with the first states kept: on to the budget's batches
                n_batch = _states_that_fit(deadline - t_check, sum(r.seconds for r in kept), after)

            def judge(r: StateResult) -> None:
                """A budget's stop judged on every state whose check has ended, in the order they end: one slow state
                on a workbench does not hold back the answer the results of the other give."""
                nonlocal stopped
                ended.append(r)
                if budget_s > 0:
                    stopped = stopped or _clear_answer(ended, clear) or _only_repeats(ended)
                    if stopped or (batch and time.monotonic() > deadline + OVERRUN * budget_s):
                        halt.set()

            while n_batch > 0:
                states = [replace(st, index=st.index + max((r.index + 1 for r in results), default=0))
                          for st in generate(records, t_start, t_end, n_batch, seed + batch, unit, events,
                                             recovery_share, chosen, covered(records, first, last, tried, unit),
                                             FIRST_DRAWN if batch == 0 and after < n_states else LATER_DRAWN)]
                tried += states
                total = "" if budget_s > 0 else f"/{after + len(states)}"
                if batch == 0:
                    progress(f"recorded {len(acks):,} acknowledgements, {last - first:,} writes and flushes, "
                             f"{len(events):,} events; checking {len(states)} states"
                             + (f" ({after} kept from an interrupted attempt)" if after else "")
                             + (f" {workers} at a time" if workers > 1 else "")
                             + (f", then more within {budget_s:.0f} s" if budget_s > 0 else ""))
                else:
                    progress(f"{len(states)} more states within the {max(0.0, deadline - time.monotonic()):.0f} s "
                             "left")
                # a state whose image an earlier one had is not checked again: that check counts for both (not a
                # recovery crash, whose second cut is drawn anew; not the user's program, whose check reads the cut)
                if identities is not None:
                    identities.rewind()  # the batch's states from the start of the run again; nothing hashed again
                ids = [None if identities is None or st.recovery else identities.of(st.durable, st.kept)
                       for st in states]
                halt = threading.Event()  # the batch's: `judge` sets it
                for r in check_states(checkers, states, ids, halt, judge):
                    results.append(r)  # in the order of the states: what `checked` saves is a first part of them
                    checked(r)
                    progress(f"state {r.index + 1}{total} ({r.mode}{', recovery crashed' if r.recovery else ''}): "
                             + _said(r, backend))
                if budget_s > 0 and not stopped:  # a batch's random moments are a sample over the whole run once
                    # it is checked to its end: the goal is judged then (a batch is sized to end there, below)
                    stopped = _at_goal(results, goal, rules_out) or (one_image_said(len(acks), len(results))
                                                                     if single else "")
                if budget_s <= 0 or stopped:
                    break
                n_batch = min(_states_that_fit(deadline - time.monotonic(), time.monotonic() - t_check,
                                               len(results) - after), _states_for_goal(results, goal, rules_out))
                if n_batch:
                    for bench in benches:
                        bench.rewind(pristine)
                    batch += 1
            check_s = time.monotonic() - t_check + sum(r.seconds for r in kept)
            build_s = sum(bench.seconds for bench in benches)
    results.sort(key=lambda r: r.index)  # checked at once, they may end out of order
    gaps = crash_model_gaps(spec, unit, sum(1 for r in results if r.torn))
    resumed = (f"{after} of the {len(results)} states were checked before an interruption, on an earlier recording "
               "of the same workload; the commits, writes and flushes counted are this recording's",) if after else ()
    return CrashResult(backend, len(acks), last - first, flushes, tuple(results), rec.seconds,
                       model_text(unit, recovery_share, chosen), UNSEEN, unit, recovery_share, check_s, build_s,
                       tuple(f"{(e.t_ns - t_start) / 1e9:.2f} s: {e.what}" for e in events[:50]), tuple(gaps),
                       (*(driver.notes() if isinstance(driver, Program) else ()), *resumed), budget_s, stopped,
                       coverage(records, first, last, tried, unit))


def checkers_for(config: FsConfig, rec: Recorded, ledger: Ledger, driver: Commits | Program, benches: list[Workbench],
                 stack: ExitStack, seed: int, unit: int = DEFAULT_UNIT, keep: Path | None = None,
                 name: str = "") -> list[StateChecker]:
    """A checker per workbench, each with its client processes that stay up and its station (both ended with
    `stack`), all sharing what was found per identity."""
    outcomes: dict[int, tuple[int, Outcome, str]] = {}  # identity -> its check
    tag = uuid.uuid4().hex[:8]
    return [StateChecker(config, bench, rec.base, ledger, driver, rec.acks, seed, unit, keep, name, rec.t_start,
                         rec.events, outcomes, stack.enter_context(clients(ledger, rec.base / f"client-{tag}-{k}.err")),
                         Station(stack, ledger, config, bench.image, rec.base / f"station-{tag}-{k}"), discards=True)
            for k, bench in enumerate(benches)]


class StateChecker:
    """Checks states one by one on its workbench; a state whose image an earlier one had (the same identity) takes
    that check's findings, its losses counted against its own cut. Checkers working at once share `outcomes`."""

    def __init__(self, config: FsConfig, bench: Workbench, base: Path, ledger: Ledger, driver: Commits | Program,
                 acks: dict[int, int], seed: int, unit: int, keep: Path | None, name: str, t_start: int,
                 events: Sequence[Any], outcomes: dict[int, tuple[int, Outcome, str]] | None = None,
                 standing: Clients | None = None, station: Station | None = None, discards: bool = False) -> None:
        self.config, self.bench, self.base, self.ledger, self.driver = config, bench, base, ledger, driver
        self.standing = standing  # the client processes that stay up for its checks (None: one per check)
        self.station = station  # its mount point and ledger entries, made once (None: made per state)
        # a server whose check nothing reads after it started and ended as the database allows (discarded_check;
        # False: every server started and stopped as for a state kept, the reference the fast check is held to)
        self.discards = discards
        self.acks, self.seed, self.unit, self.keep, self.name = acks, seed, unit, keep, name
        self.t_start, self.events = t_start, events
        # identity -> (state checked, found, kept as)
        self.outcomes: dict[int, tuple[int, Outcome, str]] = {} if outcomes is None else outcomes

    def _named(self, r: StateResult) -> StateResult:
        return self.driver.named(r) if isinstance(self.driver, Commits) else r

    def _placed(self, r: StateResult, st: CrashState, t_state: float) -> StateResult:
        return replace(r, seconds=time.monotonic() - t_state,  # building the image included
                       at_s=(st.t_ns - self.t_start) / 1e9, when=when(st.t_ns, self.t_start, self.events))

    def check(self, st: CrashState, identity: int | None) -> StateResult:
        t_state = time.monotonic()
        bench = self.bench
        if identity is not None and identity in self.outcomes:
            bench.advance(st)
            same, earlier, kept_as = self.outcomes[identity]
            return self._placed(self._named(replace(judged(st, self.acks, earlier, 0.0), same_as=same,
                                                    kept_as=kept_as)), st, t_state)
        bench.prepare(st)
        found: Outcome | None = None
        if st.recovery:  # the second cut drawn from the state's own number: the same whichever checker checks it
            rng = random.Random(self.seed * 7919 + 1 + st.index)
            r = _recover_twice(self.config, bench, st, self.base, self.ledger, self.driver, self.acks, rng, self.unit,
                               self.standing, self.station)
        else:
            found = check_image(self.config, bench.image, self.base, self.ledger, self.driver, self.acks, st,
                                standing=self.standing, station=self.station,
                                discarded=self.discards and discarded_check(st, self.keep))
            r = judged(st, self.acks, found, 0.0)
        bench.checked()
        r = self._placed(self._named(r), st, t_state)
        if self.keep is not None and r.failed:
            name = f"{self.name}-state-{st.index}.img".replace("/", "_")
            try:  # as the check left it (recovered, if it could)
                r = replace(r, kept_as=str(keep_image(bench.served.backing, self.keep, name)))
            except (OSError, subprocess.CalledProcessError, PickfsError) as exc:
                why = exc.one_line() if isinstance(exc, PickfsError) else str(exc)
                r = replace(r, problem="; ".join(x for x in (r.problem, f"image not kept: {why}") if x))
        bench.reset()
        if identity is not None and found is not None:
            self.outcomes[identity] = (st.index, found, r.kept_as)
        return r


def _said(r: StateResult, backend: str) -> str:
    """A checked state in a progress line (pure)."""
    if r.same_as >= 0:
        what = f"the same image as state {r.same_as + 1}, checked once for both"
        return what + (f": lost {r.lost:,} of {r.acked_before:,} acknowledged commits" if r.lost else "")
    problem = f"; {r.problem[:120]}{'...' if len(r.problem) > 120 else ''}" if r.problem else ""
    return (f"lost {r.lost:,} of {r.acked_before:,} acknowledged commits" if r.lost else
            f"all {r.acked_before:,} acknowledged commits present" if backend != PROGRAM else
            ("check failed" if r.consistent is False else "check passed")) + problem


OVERRUN = 0.25  # a batch past its budget by this share of it stops where it is
BATCH_MOST = 2000  # states in one batch at most (the states of a batch are generated together)
BATCH_LEAST = 3  # fewer states than this fit in what is left of the budget: stop


def _states_that_fit(left_s: float, spent_s: float, done: int) -> int:
    """How many more states fit in `left_s` seconds, at the pace so far (90% of them: a batch should end within
    the budget); 0 when fewer than BATCH_LEAST do (pure)."""
    if done <= 0 or left_s <= 0 or spent_s <= 0:
        return 0
    n = min(BATCH_MOST, int(0.9 * left_s * done / spent_s))
    return n if n >= BATCH_LEAST else 0


def _clear_answer(results: Sequence[StateResult], clear: Callable[[int, int], bool]) -> str:
    """Why the states checked so far answer clearly enough to stop (`clear`: the loss rate of the distinct states
    cut at random moments known within a factor of two); "" while they do not (pure)."""
    sample = [r for r in results if r.drawn and r.distinct]
    failed = sum(1 for r in sample if r.failed)
    if not failed or not clear(failed, len(sample)):
        return ""
    return (f"stopped early with a clear answer: {failed} of {len(sample)} distinct states cut at random moments "
            "lost or damaged something, a loss rate known within a factor of two")


def _clean_sample(results: Sequence[StateResult]) -> int | None:
    """The distinct states cut at random moments, when no state failed at all (else None) (pure)."""
    if any(r.failed for r in results):
        return None
    return sum(1 for r in results if r.drawn and r.distinct)


def _at_goal(results: Sequence[StateResult], goal: int, rules_out: Callable[[int], int]) -> str:
    """Why a cell none of whose states failed stops: its distinct states cut at random moments rule out a loss in 1
    state of `goal` or more (`rules_out(n)`: the K of the "1 in K" that n clean ones rule out); "" while they do not,
    or with no goal (0) (pure)."""
    n = _clean_sample(results)
    if not goal or n is None or rules_out(n) < goal:
        return ""
    return (f"stopped at its goal: none lost in {n:,} distinct states cut at random moments, so a loss in 1 state "
            f"of {rules_out(n):,} or more would have shown with 95% confidence (the goal: 1 in {goal:,})")


def _states_for_goal(results: Sequence[StateResult], goal: int, rules_out: Callable[[int], int]) -> int:
    """How many more states a batch needs for a clean cell's random ones to reach its goal (LATER_DRAWN of them at
    random, a tenth of those allowed for duplicates), at least BATCH_LEAST; BATCH_MOST with no goal, or once
    something failed (pure)."""
    n = _clean_sample(results)
    if not goal or n is None:
        return BATCH_MOST
    high = max(1, n)
    while rules_out(high) < goal:  # an upper end for the search below
        high *= 2
    need = bisect.bisect_left(range(high + 1), goal, lo=n, key=rules_out)  # the fewest clean random ones at the goal
    return max(BATCH_LEAST, math.ceil((need - n) / (LATER_DRAWN * 0.9)))


REPEATS = 100  # states in a row, each an image checked already, after which a budget stops drawing more


def _only_repeats(results: Sequence[StateResult]) -> str:
    """Why drawing more states would only repeat images checked already: the last REPEATS states checked (in the
    order their checks ended; those that lose power again during recovery, drawn anew each time, left aside) all had
    the image of an earlier state; "" while they did not (pure). Checks that end out of the states' order are still
    in order per workbench, and which workbench a state goes to depends on its identity, not on its check's time.
    After n such states in a row, the share of further states that would be new images is below 3/n with 95%
    confidence (none in n: 1 - 0.05^(1/n), about 3/n), under 3 in 100 for REPEATS."""
    run = 0
    for r in reversed(results):
        if r.recovery:
            continue
        if r.distinct:
            break
        run += 1
        if run >= REPEATS:
            distinct = sum(1 for x in results if x.distinct)
            return (f"stopped: the last {REPEATS} states drawn were each an image checked already, so fewer than 3 "
                    f"in 100 more would be new (95% confidence); {distinct:,} distinct of {len(results):,} states")
    return ""


def one_image_said(commits: int, states: int) -> str:
    """Why a recording whose window holds no write stops after its first states (pure)."""
    return (f"every state of this recording is one image: no write reached the disk while the workload ran "
            f"({commits:,} commits acknowledged), so every power cut leaves the same disk; stopped after {states:,} "
            "states instead of checking it again")


def state_json(result: StateResult) -> str:
    """One checked state as it is saved the moment it is known (pure)."""
    return json.dumps(asdict(result))


def state_from_json(text: str) -> StateResult | None:
    """A saved state read back (pure); None when the text is not one (what is unknown in it is left out)."""
    try:
        doc = json.loads(text)
        known = {f.name for f in fields(StateResult)}
        return StateResult(**{k: v for k, v in doc.items() if k in known})
    except (ValueError, TypeError, AttributeError):
        return None


def owed_lines(stamped: str, t_cut: int) -> list[str]:
    """The user's acknowledgement lines ('arrival-ns line') that arrived before the power cut, unstamped (pure)."""
    out = []
    for line in stamped.splitlines():
        t, sep, text = line.partition(" ")
        if sep and t.isdigit() and int(t) < t_cut:
            out.append(text)
    return out


def write_owed(stamped: Path, owed: Path, t_cut: int) -> None:
    """The acknowledgement lines owed at `t_cut` written for the user's check, in the bytes the user's command wrote
    them (they need not be UTF-8); none when no line arrived."""
    text = stamped.read_text(errors="surrogateescape") if stamped.exists() else ""
    owed.write_text("".join(f"{line}\n" for line in owed_lines(text, t_cut)), errors="surrogateescape")


def arrivals(path: Path) -> list[int]:
    """The arrival moments of the user's acknowledgement lines in the stamped log (acks_from's), in order; [] when
    none arrived. Only the stamps are read: a line of the user's need not be UTF-8."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        t, _, _ = line.partition(" ")
        if t.isdigit():
            out.append(int(t))
    return out
