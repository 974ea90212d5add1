"""command: the user's own command (a test suite, a migration, a build) on the filesystem under test.

It runs with its working directory on that filesystem and, with `server` set, against a database
server pickfs started there, reachable through the usual variables (PGHOST, PGPORT, PGDATABASE,
PGUSER, MYSQL_UNIX_PORT, DATABASE_URL). A command that fails is reported with its output's tail,
never timed.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

from pickfs.errors import CommandFailed, PlanError
from pickfs.model import MetricDef, RawOutput, WorkloadSpec
from pickfs.services import REGISTRY as SERVICES
from pickfs.services.base import Endpoint
from pickfs.services.mariadb import SETTINGS as MARIADB_SETTINGS
from pickfs.services.postgres import SETTINGS as POSTGRES_SETTINGS
from pickfs.units import parse_duration
from pickfs.workloads.base import Workload

SERVER_SETTINGS = {"postgresql": POSTGRES_SETTINGS, "mariadb": MARIADB_SETTINGS}
OUTPUT_TAIL = 4000


def argv_of(command: str | list[str]) -> list[str]:
    """A list runs as given; a string runs through the shell, as the user would type it (pure)."""
    return list(command) if isinstance(command, list) else ["/bin/sh", "-c", command]


class Command(Workload):
    name = "command"
    description = "your own command, timed with its working directory (and optionally a database server) on the filesystem"
    metrics = (
        MetricDef("elapsed_s", "s", False, "wall time of the command"),
        MetricDef("cpu_s", "s", False, "user + system CPU time of the command and its children"),
    )
    defaults: dict[str, Any] = {
        "command": "",  # a shell line, or a list of arguments
        "setup": "",  # run once before the warm-up, not timed (create a schema, install dependencies)
        "server": "",  # postgresql or mariadb: started on the filesystem under test
        "env": {},  # more environment variables for the command
        "timeout": "1h",
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
        out.update(server_keys)
        return out

    @classmethod
    def setting_names(cls) -> set[str]:
        return set(cls.defaults).union(*SERVER_SETTINGS.values())

    @classmethod
    def check(cls, settings: dict[str, Any]) -> dict[str, Any]:
        out = dict(settings)
        cmd = out["command"]
        if not cmd or (isinstance(cmd, list) and not all(isinstance(a, str) for a in cmd)):
            raise PlanError("the command workload needs the command to run",
                            "e.g. --set command='\"pytest -x tests\"' or command = \"make test\" in the plan")
        if out["server"] and out["server"] not in SERVICES:
            raise PlanError(f"command server {out['server']!r} is not known", f"use one of {', '.join(SERVICES)}")
        if not isinstance(out["env"], dict):
            raise PlanError("command env must be a table of names and values", 'e.g. env = { RAILS_ENV = "test" }')
        out["env"] = {str(k): str(v) for k, v in out["env"].items()}
        out["timeout"] = parse_duration(out["timeout"])
        return out

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
    def environment(spec: WorkloadSpec, workdir: Path, endpoint: Endpoint | None) -> dict[str, str]:
        env = {"PICKFS_DIR": str(workdir), "TMPDIR": str(workdir / "tmp")}
        if endpoint is not None:
            env.update(endpoint.env)
        env.update(spec.get("env") or {})
        return env

    def _execute(self, what: str, command: str | list[str], spec: WorkloadSpec, datadir: Path,
                 endpoint: Endpoint | None) -> dict[str, Any]:
        work = datadir / "work"
        (work / "tmp").mkdir(parents=True, exist_ok=True)
        argv = argv_of(command)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, errors="replace",
                                  timeout=spec.get("timeout"),
                                  env={**os.environ, **self.environment(spec, work, endpoint)})
        except subprocess.TimeoutExpired:
            raise CommandFailed([what], -1, f"did not finish within {spec.get('timeout'):.0f}s",
                                "raise timeout, or check that the command does not wait for input") from None
        except OSError as exc:
            raise CommandFailed([what], -1, f"could not start {argv[0]}: {exc.strerror}",
                                "check the command's path") from None
        elapsed = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        output = (proc.stdout + proc.stderr)[-OUTPUT_TAIL:]
        if proc.returncode != 0:
            shown = command if isinstance(command, str) else shlex.join(command)
            raise CommandFailed([f"{what} `{shown}`"], proc.returncode, output,
                                "the command failed on this configuration; not timed")
        return {"client": "pickfs-command", "step": what, "exit": proc.returncode, "elapsed_s": elapsed,
                "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                "server": endpoint.version if endpoint else None, "output_tail": output}

    def prepare(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        if not spec.get("setup"):
            (datadir / "work" / "tmp").mkdir(parents=True, exist_ok=True)
            return RawOutput(json.dumps({"client": "pickfs-command", "step": "setup", "note": "no setup"}), 0.0)
        doc = self._execute("setup", spec.get("setup"), spec, datadir, endpoint)
        return RawOutput(json.dumps(doc), doc["elapsed_s"])

    def run(self, spec: WorkloadSpec, datadir: Path, endpoint: Endpoint | None = None) -> RawOutput:
        doc = self._execute("command", spec.get("command"), spec, datadir, endpoint)
        return RawOutput(json.dumps(doc), doc["elapsed_s"])

    @staticmethod
    def parse(raw: str) -> dict[str, float]:
        doc = json.loads(raw)
        if doc.get("client") != "pickfs-command" or doc.get("step") != "command":
            raise ValueError("not the output of a command run")
        if doc["exit"] != 0:
            raise ValueError(f"the command exited {doc['exit']}")
        return {"elapsed_s": float(doc["elapsed_s"]), "cpu_s": float(doc["cpu_s"])}
