"""One commits client that checks state after state (`python -m pickfs.clients.commits serve`).

Starting Python, pickfs's modules and the database's driver took most of a SQLite state's check when
every state started its own client. A client that stays up answers each check as the one-shot
client would: the same check function, on a connection of its own that is closed before the answer
is written, in a process whose working directory is `/` (it holds nothing of the state's filesystem
when that is unmounted). A check that does not answer in time is a hung check, as before: the
process is ended and the next check starts a new one; one that dies raises as the one-shot
client's failure did; one whose answer says the process ends (its engine failed on the database,
clients/commits.py) is waited for until it has ended, and the next check starts a new one. An
engine that runs inside its client (embedded Firebird) is served the same way: what it keeps
across checks (its lock files) goes to the checker's own directory (`Clients.home`), never to the
state's filesystem, so nothing of a state outlives its check.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from pickfs.errors import CommandFailed
from pickfs.stack.cleanup import holding
from pickfs.stack.filesystems import SBIN_PATH
from pickfs.stack.ledger import Ledger

CLIENT = "pickfs.clients.commits"


class ClientProcess:
    """The client process for one environment; started on first use, started again after a hung check."""

    def __init__(self, ledger: Ledger, errors: Path, backend: str, env: dict[str, str] | None) -> None:
        self.ledger, self.errors, self.backend, self.env = ledger, errors, backend, env
        self.proc: subprocess.Popen[bytes] | None = None
        self._stack: ExitStack | None = None
        self._buf = b""
        self.started = 0  # processes started (1 unless a check hung)

    def _start(self) -> subprocess.Popen[bytes]:
        stack = ExitStack()
        try:
            box = stack.enter_context(holding(self.ledger, "process", child_pid=0, match=CLIENT, stop_signal="SIGTERM"))
            env = None if self.env is None else {**os.environ, "PATH": SBIN_PATH, **self.env}
            with open(self.errors, "ab") as err:
                proc = subprocess.Popen([sys.executable, "-m", CLIENT, "serve", "--backend", self.backend],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env, cwd="/",
                                        start_new_session=True)
            box[0] = self.ledger.update(box[0], child_pid=proc.pid)
        except BaseException:
            stack.close()
            raise
        self.proc, self._stack, self._buf = proc, stack, b""
        self.started += 1
        return proc

    def ask(self, argv: list[str], timeout: float) -> dict[str, Any] | None:
        """The check's answer (the one-shot client's JSON document); None when it did not come within `timeout`
        seconds (the process is ended). CommandFailed when the process died."""
        if self.proc is not None and self.proc.poll() is not None:  # ended after its last answer
            self.stop()
        proc = self.proc or self._start()
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(argv).encode() + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:
            self._died(argv)
        deadline = time.monotonic() + timeout
        while True:
            line = self._line(deadline)
            if line is None:
                self.stop(kill=True)
                return None
            try:
                doc = json.loads(line)
            except ValueError:
                continue  # something a driver printed: the answer is a JSON object of the client's
            if isinstance(doc, dict) and doc.get("client"):
                if doc.get("ends"):  # its engine failed: the process ends after this answer, and is gone before the
                    self.stop()  # state's filesystem is checked further or unmounted (the next check starts another)
                return doc

    def _line(self, deadline: float) -> bytes | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self._died([])
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _died(self, argv: list[str]) -> None:
        assert self.proc is not None
        code = self.proc.wait()
        self.stop()
        try:
            said = self.errors.read_text(errors="replace")[-2000:]
        except OSError:
            said = ""
        raise CommandFailed([sys.executable, "-m", CLIENT, "check", *argv], code, said)

    def stop(self, kill: bool = False) -> None:
        """End the process (its stdin closed, so it ends by itself; killed when `kill` or it does not)."""
        proc, stack = self.proc, self._stack
        self.proc, self._stack = None, None
        if proc is not None:
            if kill:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            else:
                try:
                    assert proc.stdin is not None
                    proc.stdin.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
        if stack is not None:
            stack.close()


class Clients:
    """The client processes of one checker (states checked at once each have their own): one per environment the
    checks need. `home`: a directory of the checker's own (made when first needed), off the states' filesystems,
    for what an engine running in its client keeps across checks; by default beside `errors`."""

    def __init__(self, ledger: Ledger, errors: Path, home: Path | None = None) -> None:
        self.ledger, self.errors = ledger, errors
        self.home = home or errors.with_name(f"{errors.name}.home")
        self.by_key: dict[tuple[str, str], ClientProcess] = {}

    def ask(self, backend: str, env: dict[str, str] | None, argv: list[str], timeout: float) -> dict[str, Any] | None:
        key = (backend, json.dumps(env, sort_keys=True))
        if key not in self.by_key:
            self.by_key[key] = ClientProcess(self.ledger, self.errors, backend, env)
        return self.by_key[key].ask(argv, timeout)

    def close(self) -> None:
        for client in self.by_key.values():
            client.stop()
        self.by_key.clear()


@contextmanager
def clients(ledger: Ledger, errors: Path, home: Path | None = None) -> Iterator[Clients]:
    """Client processes for one checker's checks, all ended on exit."""
    found = Clients(ledger, errors, home)
    try:
        yield found
    finally:
        found.close()
