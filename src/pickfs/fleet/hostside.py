"""On a fleet host: the job Ansible starts as an async task, and the calls it polls and stops it with.

    python -m pickfs.fleet.hostside start   --dir JOB --workdir W --plan P --name HOST --fleet ID [--confirm-device D]
                                            [--timeout S]
    python -m pickfs.fleet.hostside status  --dir JOB                  (one JSON line)
    python -m pickfs.fleet.hostside stop    --workdir W [--dir JOB] [--wait S]

`start` runs the plan in a child process (`execute`, in its own session) with its output in JOB/log and its state in
JOB/status.json; started again while that child still runs, it waits for it instead of starting a
second one; past --timeout it stops the child with SIGTERM; started after an interruption, it resumes the run kept in JOB/results.db. `stop` marks
the job stopped (so a start still on its way does not begin) and sends SIGTERM to the child, which
undoes everything it built, as pickfs run does on Ctrl-C. `status` reports a job lost only when its child and the
`start` that writes how the child ended are both gone (the child's end alone is not its outcome yet).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pickfs.errors import EXIT_INTERRUPTED, PickfsError
from pickfs.stack.signals import install_sigterm

if TYPE_CHECKING:
    from pickfs.usecases.run import RunRequest

STATUS, LOG, RESULTS, STOPPED = "status.json", "log", "results.db", "stopped"
FINAL = ("complete", "failed", "interrupted", "lost")
START_GRACE_S = 300.0
FINISH_WAIT_S = 60.0  # for a start that has seen its child end to write how it ended
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def read_status(job: Path) -> dict[str, Any]:
    try:
        return cast(dict[str, Any], json.loads((job / STATUS).read_text()))
    except (OSError, ValueError):
        return {}


def write_status(job: Path, status: dict[str, Any]) -> None:
    tmp = job / f".{STATUS}.tmp"
    tmp.write_text(json.dumps(status))
    os.replace(tmp, job / STATUS)


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _is_job_process(pid: object, pid_start: object, job: Path) -> bool:
    """Is `pid` still the job's process it was (start time and command line match)? An exited child not yet reaped
    (a zombie) has no command line: it is not."""
    if not isinstance(pid, int) or _start_time(pid) != pid_start:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    dirs = [Path(os.fsdecode(arg)) for flag, arg in zip(cmdline, cmdline[1:]) if flag == b"--dir"]
    return b"pickfs.fleet.hostside" in cmdline and job in dirs  # (Path: "w//j/" is "w/j")


def alive(status: dict[str, Any], job: Path) -> bool:
    """Is the job's child still the process it started (pid, start time and command line match)?"""
    return _is_job_process(status.get("pid"), status.get("pid_start"), job)


def finishing(status: dict[str, Any], job: Path) -> bool:
    """Has the child ended while the `start` that waits for it still lives, its final status not yet written?"""
    return (status.get("state") == "running" and not alive(status, job)
            and _is_job_process(status.get("starter"), status.get("starter_start"), job))


def busy(status: dict[str, Any], job: Path) -> bool:
    """Is the job's child running, or its `start` still writing how it ended?"""
    return alive(status, job) or finishing(status, job)


def settled(job: Path, wait_s: float) -> dict[str, Any]:
    """The job's status once a `start` finishing it has written how it ended (waiting at most wait_s)."""
    deadline = time.monotonic() + wait_s
    st = read_status(job)
    while finishing(st, job) and time.monotonic() < deadline:
        time.sleep(0.05)
        st = read_status(job)
    return st


def last_line(text: str, prefix: str = "") -> str:
    for line in reversed(text.splitlines()):
        line = _ANSI.sub("", line).strip()
        if line and line.startswith(prefix):
            return line
    return ""


def outcome(rc: int, log: str) -> tuple[str, str]:
    """The job's state and error from its exit code and its output (pure)."""
    if rc == 0:
        return "complete", ""
    error = last_line(log, "error:").removeprefix("error:").strip() or last_line(log) or f"exited {rc}"
    return ("interrupted" if rc == EXIT_INTERRUPTED else "failed"), error


def run_id_in(job: Path) -> tuple[str | None, str | None]:
    """The run (and its status) in the job's results database, read-only; (None, None) before there is one."""
    db = job / RESULTS
    if not db.exists():
        return None, None
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            row = conn.execute("SELECT id, status FROM runs ORDER BY created DESC LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None, None
    return (row[0], row[1]) if row else (None, None)


def start(a: argparse.Namespace) -> int:
    job = Path(a.dir)
    status = read_status(job)
    if status.get("state") == "running" and busy(status, job):
        while busy(status, job):  # a second start (the controller came back): wait for the first to write its end
            time.sleep(1)
            status = read_status(job)
        return 0 if status.get("state") == "complete" else 1
    if a.resume == "yes":  # the controller resumes this job: an earlier stop no longer applies
        (job / STOPPED).unlink(missing_ok=True)
    if (job / STOPPED).exists():
        write_status(job, {"state": "interrupted", "error": "stopped before it started (pickfs fleet cleanup)"})
        return EXIT_INTERRUPTED
    env = {**os.environ, "PICKFS_HOST_NAME": a.name, "PICKFS_FLEET": a.fleet, "NO_COLOR": "1", "COLUMNS": "160"}
    argv = [sys.executable, "-m", "pickfs.fleet.hostside", "execute", "--dir", str(job), "--workdir", a.workdir,
            "--plan", a.plan]
    if a.confirm_device:
        argv += ["--confirm-device", a.confirm_device]
    t0 = time.time()
    with open(job / LOG, "a") as log:  # its own session: the async wrapper's killpg on its timeout misses it
        child = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                 start_new_session=True)
    # this process too: until it has written how the child ended, a poll must not read the child's end as a loss
    write_status(job, {"state": "running", "pid": child.pid, "pid_start": _start_time(child.pid), "started": t0,
                       "starter": os.getpid(), "starter_start": _start_time(os.getpid())})

    def forward(signum: int, frame: object) -> None:
        child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    timed_out = False
    try:  # the time limit kept here, with SIGTERM, so the plan undoes what it built before Ansible gives up
        rc = child.wait(timeout=a.timeout if a.timeout > 0 else None)
    except subprocess.TimeoutExpired:
        timed_out = True
        child.send_signal(signal.SIGTERM)
        rc = child.wait()
    state, error = outcome(rc, (job / LOG).read_text(errors="replace"))
    if timed_out:
        state, error = "failed", f"the plan did not end within {a.timeout:.0f} s: stopped, what it built undone"
    run_id, _ = run_id_in(job)
    write_status(job, {"state": state, "rc": rc, "error": error, "started": t0, "job_s": time.time() - t0,
                       "run_id": run_id})
    return 0 if state == "complete" else 1


def execute(a: argparse.Namespace) -> int:
    """The plan itself, as `pickfs run --plan` runs it; or the rest of the run kept here."""
    from pickfs import console  # deferred: Rich; `status` and `stop`, polled often, load none

    install_sigterm()
    try:
        request = job_request(a)
        if request is None:
            return 0
        return _run(request)
    except PickfsError as exc:
        console.error(exc.one_line())
        return exc.exit_code
    except KeyboardInterrupt:
        console.error("interrupted")
        return EXIT_INTERRUPTED


def job_request(a: argparse.Namespace) -> RunRequest | None:
    """The run this job is: the rest of the run kept in its results database, else its plan file; None when
    the run kept here is complete."""
    from pickfs import console  # deferred: Rich; `status` and `stop`, polled often, load none
    from pickfs.plan import load_plan_file  # deferred: numpy/scipy via the plan's engine; not for `status`, `stop`
    from pickfs.usecases.run import RunRequest  # deferred: numpy/scipy via the engine; not for `status`, `stop`

    job = Path(a.dir)
    results = str(job / RESULTS)
    run_id, state = run_id_in(job)
    if run_id and state == "complete":
        console.info(f"run {run_id} is complete")
        return None
    if run_id:
        console.info(f"resuming run {run_id}")
        return RunRequest(resume=run_id, workdir=a.workdir, results=results)
    plan = load_plan_file(Path(a.plan), None, a.workdir, workdir_given=True)
    if a.confirm_device:
        plan = replace(plan, target=replace(plan.target, confirm=a.confirm_device))
    return RunRequest(plan=plan, workdir=a.workdir, results=results)


def _run(request: RunRequest) -> int:
    """Run it as `pickfs run` does, its output to the job's log: the result's tables, where it is saved."""
    from pickfs import console  # deferred: Rich; `status` and `stop`, polled often, load none
    from pickfs.report.terminal import render_run  # deferred: numpy/scipy/plotly via report; not for `status`
    from pickfs.run_console import ConsoleEvents  # deferred: numpy/scipy via the engine; not for `status`, `stop`
    from pickfs.usecases.run import run_plan  # deferred: numpy/scipy via the engine; not for `status`, `stop`

    outcome = run_plan(request, ConsoleEvents())
    if outcome.record is None:  # interrupted: what was measured is kept here, to resume
        return EXIT_INTERRUPTED
    console.show(render_run(outcome.record, explain=False))
    console.info(f"saved as run {outcome.run_id} in {outcome.results}; re-render with: pickfs report {outcome.run_id}")
    error = outcome.error()
    if error is not None:
        raise error
    return 0


def prepare(a: argparse.Namespace) -> int:
    """Before a start: a job that is not running is 'starting', so no poll reads an earlier job's end as this one's."""
    job = Path(a.dir)
    st = settled(job, FINISH_WAIT_S)  # an earlier job's end written first, then this one's start
    if not (st.get("state") == "running" and busy(st, job)):
        write_status(job, {"state": "starting", "since": time.time()})
    return 0


def status(a: argparse.Namespace) -> int:
    job = Path(a.dir)
    st = read_status(job)
    state = st.get("state") or "starting"
    if state == "starting" and time.time() - float(st.get("since", time.time())) > START_GRACE_S:
        state, st["error"] = "lost", f"the job did not start within {START_GRACE_S:.0f} s"
    if state == "running" and not busy(st, job):
        st = read_status(job)  # it may have ended between the two reads
        state = st.get("state", "running")
        if state == "running" and not busy(st, job):  # the child and the start that waits for it are gone
            state, st["error"] = "lost", "the job on the host ended without a word (killed?)"
    try:
        log = (job / LOG).read_text(errors="replace")
    except OSError:
        log = ""
    run_id, run_status = run_id_in(job)
    print(json.dumps({**st, "state": state, "progress": last_line(log)[-200:], "run_id": st.get("run_id") or run_id,
                      "run_status": run_status}))
    return 0


def stop(a: argparse.Namespace) -> int:
    """Stop the fleet jobs in this work directory (one, with --dir) and wait for them to undo what they built."""
    base = Path(a.workdir) / "fleet"
    jobs = [Path(a.dir)] if a.dir else sorted(p.parent for p in base.glob(f"*/{STATUS}"))
    stopped = []
    for job in jobs:
        if not job.is_dir():
            continue
        (job / STOPPED).touch()
        st = read_status(job)
        if st.get("state") == "running" and alive(st, job):
            os.kill(st["pid"], signal.SIGTERM)
            stopped.append(job)
    deadline = time.monotonic() + a.wait  # until each has undone what it built and its start written how it ended
    while any(busy(read_status(j), j) for j in stopped) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = [str(j) for j in stopped if busy(read_status(j), j)]
    print(json.dumps({"stopped": [str(j) for j in stopped], "still_running": left}))
    return 1 if left else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pickfs.fleet.hostside")
    sub = p.add_subparsers(dest="what", required=True)
    for name in ("start", "execute"):
        s = sub.add_parser(name)
        s.add_argument("--dir", required=True)
        s.add_argument("--workdir", required=True)
        s.add_argument("--plan", required=True)
        s.add_argument("--confirm-device", default="")
        if name == "start":
            s.add_argument("--name", required=True)
            s.add_argument("--fleet", required=True)
            s.add_argument("--resume", choices=("yes", "no"), default="no")
            s.add_argument("--timeout", type=float, default=0.0, help="seconds; 0: no limit")
    sub.add_parser("status").add_argument("--dir", required=True)
    sub.add_parser("prepare").add_argument("--dir", required=True)
    s = sub.add_parser("stop")
    s.add_argument("--workdir", required=True)
    s.add_argument("--dir")
    s.add_argument("--wait", type=float, default=120.0)
    a = p.parse_args(argv)
    return {"start": start, "execute": execute, "status": status, "stop": stop, "prepare": prepare}[a.what](a)


if __name__ == "__main__":
    sys.exit(main())
