"""command: the user's own command (a test suite, a migration, a build) on the filesystem under test.

It runs with its working directory on that filesystem and, with `server` set, against a database
server pickfs started there, reachable through the usual variables (PGHOST, PGPORT, PGDATABASE,
PGUSER, MYSQL_UNIX_PORT, DATABASE_URL). A command that fails is reported with its output's tail,
never timed.

It runs in a control group of its own (stack/tracking.py; its session where no group can be made):
whatever it leaves running in the background (a server, a watcher, `sleep &`, a daemon that called
setsid) is ended when it exits, on timeout and on Ctrl-C (SIGTERM, then SIGKILL after a grace
period), and by `pickfs cleanup` after a kill -9, so nothing keeps the filesystem under test busy;
the run's notes say what was ended. It runs as root unless `run_as` names another user, and its notes say so.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pickfs import databases
from pickfs.databases.values import check_values
from pickfs.errors import CommandFailed, PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.services import REGISTRY as SERVICES
from pickfs.services.base import Endpoint
from pickfs.stack.ledger import Ledger
from pickfs.stack.signals import shielded
from pickfs.stack.tracking import tracked
from pickfs.units import has_control, parse_duration
from pickfs.workloads.base import Workload, json_doc
from pickfs.workloads.kinds import USER_COMMAND, USER_COMMAND_ON_SERVER, WorkloadKind

# a server's settings the command workload passes on to it, per service (databases/ says which)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SERVER_SETTINGS = {db.service: db.server_settings() for db in databases.DATABASES.values()
                   if db.service and db.server_settings()}
OUTPUT_TAIL = 4000
KILL_GRACE_S = 5.0  # between SIGTERM and SIGKILL for what the command leaves running
ROOT_NOTE = "the command ran as root (set run_as=USER to run it as another user)"


def argv_of(command: str | list[str]) -> list[str]:
    """A list runs as given; a string runs through the shell, as the user would type it (pure)."""
    return list(command) if isinstance(command, list) else ["/bin/sh", "-c", command]


@dataclass(frozen=True)
class RunAs:
    """The user a command runs as, with what its environment should say."""

    name: str
    uid: int
    gid: int
    home: str


def run_as_user(name: str) -> RunAs:
    """The account `name` (a user name or numeric uid); PlanError naming the fix when there is none."""
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except KeyError:
        raise PlanError(f"command run_as: there is no user {name!r} on this machine",
                        f"create it (useradd --system {name}) or name an existing user, e.g. run_as = \"nobody\"") \
            from None
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


def session_members(stats: dict[int, str], session: int) -> list[int]:
    """Live processes in `session` or in process group `session`, from /proc/PID/stat texts (pure)."""
    out = []
    for pid, text in stats.items():
        try:
            state, _ppid, pgrp, sid = text.rsplit(")", 1)[1].split()[:4]
            if state not in ("Z", "X") and session in (int(pgrp), int(sid)):
                out.append(pid)
        except (IndexError, ValueError):
            continue
    return sorted(out)


def _proc_stats() -> dict[int, str]:
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = Path(entry.path, "stat").read_text()
            except OSError:
                continue
    return out


def _describe(pid: int) -> str:
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return str(pid)
    return " ".join(a.decode(errors="replace") for a in args if a)[:80] or str(pid)


def end_session(session: int, grace_s: float = KILL_GRACE_S) -> list[str]:
    """End every process left in `session` (SIGTERM, then SIGKILL after `grace_s`); what was ended."""
    ended: dict[int, str] = {}
    deadline = time.monotonic() + grace_s
    sig = signal.SIGTERM
    while True:
        alive = [p for p in session_members(_proc_stats(), session) if p != os.getpid()]
        if not alive:
            return list(ended.values())
        if time.monotonic() > deadline + 30:
            return [*ended.values(), f"{len(alive)} still running after SIGKILL"]
        if time.monotonic() > deadline:
            sig = signal.SIGKILL
        for pid in alive:
            if pid not in ended or sig == signal.SIGKILL:
                ended.setdefault(pid, _describe(pid))
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.05)


def ended_note(ended: list[str]) -> str:
    """The note on a run after which processes had to be ended (pure)."""
    return (f"ended {len(ended)} process{'es' if len(ended) != 1 else ''} the command left running: "
            f"{'; '.join(ended)}")


class Command(Workload):
    kind = USER_COMMAND
    checks_itself = True
    list_settings = frozenset({"command"})
    name = "command"
    description = "your own command, timed with its working directory (and optionally a database server) on the filesystem"
    metrics = (
        MetricDef("elapsed_s", "s", False, "wall time of the command"),
        MetricDef("cpu_s", "s", False, "user + system CPU time of the command and its children"),
    )
    defaults: ClassVar[dict[str, Any]] = {
        "command": "",  # a shell line, or a list of arguments
        "setup": "",  # run once before the warm-up, not timed (create a schema, install dependencies)
        "server": "",  # postgresql or mariadb: started on the filesystem under test
        "env": {},  # more environment variables for the command
        "timeout": "1h",
        "run_as": "",  # a user to run the command and its setup as (default: root, as pickfs)
        "check": "",  # pickfs crashtest: run on each power-cut state; exit status 0 = the data is consistent
    }

    @classmethod
    def normalize(cls, settings: dict[str, Any]) -> dict[str, Any]:
        server = str(settings.get("server", "") or "")
        server_keys = {k: v for k, v in settings.items() if k in SERVER_SETTINGS.get(server, ())}
        rest = {k: v for k, v in settings.items() if k not in server_keys}
        try:
            out = super().normalize(rest)
        except PlanError as exc:
            if server in SERVER_SETTINGS:
                raise PlanError(exc.message, f"{exc.hint}; {server} settings: {', '.join(SERVER_SETTINGS[server])}") \
                    from None
            raise
        check_values(server_keys, f"command ({server} server)")
        out.update(server_keys)
        return out

    @classmethod
    def kind_for(cls, spec: WorkloadSpec) -> WorkloadKind:
        """Your command on a database server pickfs started is charted as a database's work."""
        return USER_COMMAND_ON_SERVER if spec.get("server") else USER_COMMAND

    @classmethod
    def setting_names(cls) -> set[str]:
        return set(cls.defaults).union(*SERVER_SETTINGS.values())

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        cmd = out["command"]
        if not cmd or not isinstance(cmd, (str, list)) or \
                (isinstance(cmd, list) and not all(isinstance(a, str) for a in cmd)):
            raise PlanError("the command workload needs the command to run",
                            "e.g. --set command='\"pytest -x tests\"' or command = \"make test\" in the plan")
        if out["server"] and out["server"] not in SERVICES:
            raise PlanError(f"command server {out['server']!r} is not known", f"use one of {', '.join(SERVICES)}")
        if not isinstance(out["env"], dict):
            raise PlanError("command env must be a table of names and values", 'e.g. env = { RAILS_ENV = "test" }')
        out["env"] = {str(k): str(v) for k, v in out["env"].items()}
        for name, value in out["env"].items():
            if not ENV_NAME.fullmatch(name):
                raise PlanError(f"command env name {name!r} is not an environment variable name",
                                'use letters, digits and _, not starting with a digit, e.g. env = { RAILS_ENV = "test" }')
            if "\0" in value:
                raise PlanError(f"command env {name} holds a NUL character", "remove it from the value")
        out["timeout"] = parse_duration(out["timeout"])
        if not isinstance(out["check"], (str, list)):
            raise PlanError("command check must be a shell line or a list of arguments", 'e.g. check = "./verify"')
        out["run_as"] = str(out["run_as"] or "")
        if has_control(out["run_as"]):
            raise PlanError("command run_as holds a control character", 'name a user, e.g. run_as = "nobody"')
        if out["run_as"]:
            run_as_user(out["run_as"])
            if out["server"]:
                raise PlanError("command run_as cannot be combined with server yet: the server's socket is "
                                "private to root", "leave run_as out, or start your own server in the command")
        return out

    @classmethod
    def root_warning(cls, spec: WorkloadSpec) -> str | None:
        """The warning to print when a plan with this workload is executed: the command runs as root."""
        if spec.name != cls.name or spec.get("run_as"):
            return None
        return f"workload {spec.label}: {ROOT_NOTE}"

    @classmethod
    def run_seconds(cls, spec: WorkloadSpec) -> float:
        return 30.0  # unknown until it has run once

    @classmethod
    def database_for(cls, spec: WorkloadSpec) -> str | None:
        return spec.get("server") or None

    @classmethod
    def service_for(cls, spec: WorkloadSpec) -> str | None:
        return spec.get("server") or None

    @classmethod
    def service_settings(cls, spec: WorkloadSpec) -> dict[str, Any]:
        return {k: v for k, v in spec.settings if k in SERVER_SETTINGS.get(spec.get("server"), ())}

    @classmethod
    def unavailable_reason(cls, spec: WorkloadSpec | None = None) -> str | None:
        if spec is not None and spec.get("server"):
            return SERVICES[spec.get("server")].unavailable_reason()
        return None

    @staticmethod
    def environment(spec: WorkloadSpec, workdir: Path, endpoint: Endpoint | None,
                    user: RunAs | None = None) -> dict[str, str]:
        # PICKFS_PYTHON: the interpreter pickfs runs on, so a command can run the suites shipped with
        # it (`$PICKFS_PYTHON -m pickfs.suites.r1`) with pickfs's own drivers, whatever PATH says
        env = {"PICKFS_DIR": str(workdir), "TMPDIR": str(workdir / "tmp"), "PICKFS_PYTHON": sys.executable}
        if user is not None:
            env.update(HOME=user.home, USER=user.name, LOGNAME=user.name)
        if endpoint is not None:
            env.update(endpoint.env)
        env.update(spec.get("env") or {})
        return env

    @staticmethod
    def _workdir(datadir: Path, user: RunAs | None) -> Path:
        """The command's directory on the filesystem under test, its own user's when run_as is set."""
        work = datadir / "work"
        (work / "tmp").mkdir(parents=True, exist_ok=True)
        if user is not None:  # the data directory pickfs made on the filesystem under test becomes theirs
            for path in (datadir, work, work / "tmp"):
                os.chown(path, user.uid, user.gid, follow_symlinks=False)
        return work

    def execute(self, what: str, command: str | list[str], spec: WorkloadSpec, datadir: Path,
                 endpoint: Endpoint | None) -> dict[str, Any]:
        user = run_as_user(spec.get("run_as")) if spec.get("run_as") else None
        work = self._workdir(datadir, user)
        argv = argv_of(command)
        ids: dict[str, Any] = {} if user is None else {
            "user": user.uid, "group": user.gid, "extra_groups": os.getgrouplist(user.name, user.gid)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        # Output to an unlinked file, not a pipe: a background process holding a pipe open would
        # keep pickfs waiting after the command itself has exited.
        # Its own control group, recorded in the ledger before it starts: a daemon it leaves (setsid, double
        # fork) is found and ended here, and by `pickfs cleanup` after a kill -9 of pickfs.
        with tracked(Ledger(self.cache.parent / "ledger"), what) as group, tempfile.TemporaryFile() as out:
            t0 = time.perf_counter()
            try:
                with group.spawning():
                    proc = subprocess.Popen(argv, cwd=work, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT,
                                            env={**os.environ, **self.environment(spec, work, endpoint, user)},
                                            start_new_session=True, **ids)
            except OSError as exc:
                raise CommandFailed([what], -1, f"could not start {argv[0]}: {exc.strerror}",
                                    "check the command's path") from None
            timed_out = False
            try:
                try:
                    returncode = proc.wait(timeout=spec.get("timeout"))
                except subprocess.TimeoutExpired:
                    timed_out = True
                elapsed = time.perf_counter() - t0
            finally:
                with shielded():
                    ended = [*group.end(spare=frozenset({proc.pid})), *end_session(proc.pid)]
                    returncode = proc.wait()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            out.seek(0, os.SEEK_END)
            out.seek(max(0, out.tell() - OUTPUT_TAIL * 4))
            output = out.read().decode(errors="replace")[-OUTPUT_TAIL:]
        left = f"; {ended_note(ended)}" if ended else ""
        if timed_out:
            raise CommandFailed([what], -1, f"did not finish within {spec.get('timeout'):.0f}s",
                                f"raise timeout, or check that the command does not wait for input{left}")
        if returncode != 0:
            shown = command if isinstance(command, str) else shlex.join(command)
            raise CommandFailed([f"{what} `{shown}`"], returncode, output,
                                f"the command failed on this configuration; not timed{left}")
        return {"client": "pickfs-command", "step": what, "exit": returncode, "elapsed_s": elapsed,
                "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                "server": endpoint.version if endpoint else None, "output_tail": output,
                "user": user.name if user else pwd.getpwuid(os.geteuid()).pw_name, "ended": ended}

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        if not spec.get("setup"):
            self._workdir(datadir, run_as_user(spec.get("run_as")) if spec.get("run_as") else None)
            return RawOutput(json.dumps({"client": "pickfs-command", "step": "setup", "note": "no setup"}), 0.0)
        doc = self.execute("setup", spec.get("setup"), spec, datadir, endpoint)
        return RawOutput(json.dumps(doc), doc["elapsed_s"])

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        doc = self.execute("command", spec.get("command"), spec, datadir, endpoint)
        return RawOutput(json.dumps(doc), doc["elapsed_s"])

    @staticmethod
    def notes_from(raw: str) -> list[str]:
        """Who the command ran as (when root), and what it left running that had to be ended (pure)."""
        doc = json_doc(raw)
        notes = [ROOT_NOTE] if doc.get("user") == "root" else []
        if doc.get("ended"):
            notes.append(ended_note(list(doc["ended"])))
        return notes

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("client") != "pickfs-command" or doc.get("step") != "command":
            raise ValueError("not the output of a command run")
        if doc["exit"] != 0:
            raise ValueError(f"the command exited {doc['exit']}")
        return {"elapsed_s": float(doc["elapsed_s"]), "cpu_s": float(doc["cpu_s"])}
