"""ansible-playbook as pickfs runs it: its own session (Ctrl-C reaches pickfs, which stops it in order),
pickfs's callback (one JSON event a line), and the inventory and limit as the user gave them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pickfs.fleet import callback
from pickfs.fleet.inventory import ansible_tool


@dataclass(frozen=True)
class Event:
    kind: str  # task | ok | failed | ignored | unreachable | skipped | retry | stats | output
    task: str = ""
    host: str = ""
    result: dict[str, Any] = field(default_factory=dict)
    text: str = ""  # a line Ansible printed that is not an event (a warning)

    def message(self) -> str:
        """What went wrong, in one line: the command's last line of stderr, else Ansible's message."""
        r = self.result
        for key in ("stderr", "msg"):
            value = r.get(key)
            if isinstance(value, str) and value.strip():
                lines = [line.strip() for line in value.strip().splitlines() if line.strip()]
                return lines[-1]
        return f"{self.task} failed" + (f" (exit {r['rc']})" if "rc" in r else "")


def parse_event(line: str) -> Event:
    """One line of ansible-playbook's output under pickfs's callback (pure)."""
    try:
        doc = json.loads(line)
    except ValueError:
        return Event("output", text=line.rstrip())
    if not isinstance(doc, dict) or "event" not in doc:
        return Event("output", text=line.rstrip())
    return Event(doc["event"], doc.get("task", ""), doc.get("host", ""), doc.get("result") or {})


def environment(work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "ANSIBLE_CALLBACK_PLUGINS": str(Path(callback.__file__).parent),
        "ANSIBLE_STDOUT_CALLBACK": "pickfs_events",
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_PYTHON_INTERPRETER": os.environ.get("ANSIBLE_PYTHON_INTERPRETER", "auto_silent"),
        "ANSIBLE_LOCAL_TEMP": str(work / "ansible-tmp"),
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
        "PYTHONUNBUFFERED": "1",
        # Ansible's default adds -C: compressing wheels (already zip files) only costs CPU on both ends.
        "ANSIBLE_SSH_ARGS": os.environ.get("ANSIBLE_SSH_ARGS", "-o ControlMaster=auto -o ControlPersist=60s"),
    }


class Playbook:
    """One ansible-playbook process; iterate it for its events."""

    def __init__(self, playbook: Path, inventories: list[str], hosts: list[str], vars_file: Path, work: Path,
                 forks: int) -> None:
        """`inventories`: the user's, then any of pickfs's own that add to its hosts' variables."""
        sources = [arg for inventory in inventories for arg in ("-i", inventory)]
        argv = [ansible_tool("ansible-playbook"), *sources, "--limit", ",".join(hosts), "-f", str(forks),
                "-e", f"@{vars_file}", str(playbook)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     text=True, env=environment(work), start_new_session=True, bufsize=1)

    def events(self) -> Iterator[Event]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                yield parse_event(line)
        self.proc.wait()

    def stop(self) -> None:
        """End ansible-playbook and its ssh connections (the jobs on the hosts go on: they are async)."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass


def run_to_end(playbook: Playbook, on_event: Callable[[Event], None]) -> int:
    for event in playbook.events():
        on_event(event)
    return playbook.proc.returncode
