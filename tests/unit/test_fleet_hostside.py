"""The host side of a fleet job between its child's end and the moment its `start` writes how it ended: real
processes (`python -m pickfs.fleet.hostside start`, its `execute` child), the start held with SIGSTOP in that gap."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HOSTSIDE = [sys.executable, "-m", "pickfs.fleet.hostside"]


def hostside(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*HOSTSIDE, *args], capture_output=True, text=True, timeout=120)


def until(what, timeout: float = 60.0, step: float = 0.005):
    deadline = time.monotonic() + timeout
    while not (found := what()):
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s in vain"
        time.sleep(step)
    return found


def state_of(job: Path) -> dict:
    try:
        return json.loads((job / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


def ended(pid: int) -> bool:
    try:
        return zombie(pid)
    except OSError:
        return True


def test_a_child_ended_before_its_start_wrote_how_is_still_running_not_lost_and_the_next_prepare_waits(tmp_path):
    job, workdir = tmp_path / "fleet" / "fleet-20260101-000000-abcd", tmp_path / "work"
    job.mkdir(parents=True)
    starter = subprocess.Popen([*HOSTSIDE, "start", "--dir", str(job), "--workdir", str(workdir), "--plan",
                                str(tmp_path / "no-such-plan.toml"), "--name", "h", "--fleet", "f"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    prepare = None
    try:
        running = until(lambda: (st := state_of(job)).get("state") == "running" and st)
        os.kill(starter.pid, signal.SIGSTOP)  # the start, as a loaded machine may hold it, before it reaps its child
        until(lambda: zombie(running["pid"]))  # the child (its plan file missing) has ended: exited, not yet reaped

        polled = hostside("status", "--dir", str(job))
        assert polled.returncode == 0, polled.stderr
        assert json.loads(polled.stdout)["state"] == "running", polled.stdout  # not "lost": its start still lives

        # the next job's prepare waits for this one's end to be written first, so no poll reads it as its own
        prepare = subprocess.Popen([*HOSTSIDE, "prepare", "--dir", str(job)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        assert prepare.poll() is None, "prepare did not wait for the start still finishing"
        os.kill(starter.pid, signal.SIGCONT)
        assert starter.wait(timeout=60) == 1
        _, err = prepare.communicate(timeout=60)
        assert prepare.returncode == 0, err
        assert state_of(job)["state"] == "starting"
        log = (job / "log").read_text()
        assert "no-such-plan.toml" in log, log  # the job's own end, in its log
    finally:
        for proc in (starter, prepare):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()


def test_a_start_gone_with_its_child_is_lost(tmp_path):
    job = tmp_path / "fleet" / "fleet-20260101-000000-abcd"
    job.mkdir(parents=True)
    starter = subprocess.Popen([*HOSTSIDE, "start", "--dir", str(job), "--workdir", str(tmp_path / "work"), "--plan",
                                str(tmp_path / "no-such-plan.toml"), "--name", "h", "--fleet", "f"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        running = until(lambda: (st := state_of(job)).get("state") == "running" and st)
        starter.kill()  # kill -9 of the start: no one is left to write how the child ended
        starter.wait()
        until(lambda: ended(running["pid"]), step=0.1)  # the child ends too (its plan file missing)
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
    polled = json.loads(hostside("status", "--dir", str(job)).stdout)
    assert polled["state"] == "lost" and "ended without a word" in polled["error"]
