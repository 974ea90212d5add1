"""Running external programs: argument lists, never a shell; stderr goes into the error."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence

from pickfs.errors import CommandFailed, ToolMissing
from pickfs.model import RawOutput
from pickfs.stack.filesystems import SBIN_PATH, which


def resolve(tool: str, package: str = "") -> str:
    path = which(tool)
    if path is None:
        hint = f"apt-get install {package}" if package else f"install {tool}"
        raise ToolMissing(f"{tool} is not installed", hint)
    return path


def run(argv: Sequence[str], *, package: str = "", timeout: float | None = 600, hint: str = "",
        input_text: str | None = None, env: dict[str, str] | None = None,
        preexec: Callable[[], None] | None = None, cwd: str | None = None) -> RawOutput:
    """Run a program; return its stdout and wall time, or raise CommandFailed with its stderr.

    preexec: run in the child before the program (a control group to enter: stack/tracking.py).
    cwd: the directory it runs in (mkfs and mount: an empty one, so a bare relative name reaches nothing)."""
    args = [resolve(argv[0], package), *argv[1:]]
    full_env = None
    if env is not None:
        full_env = {**os.environ, "PATH": SBIN_PATH, **env}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, input=input_text,
                              env=full_env, preexec_fn=preexec, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise CommandFailed(list(argv), -1, f"timed out after {timeout:.0f}s {_text(exc.stderr)}", hint) from None
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise CommandFailed(list(argv), proc.returncode, proc.stderr or proc.stdout, hint)
    return RawOutput(text=proc.stdout, elapsed_s=elapsed)


def _text(out: str | bytes | None) -> str:
    """What a timed-out program had written: text, whether it arrived as text or bytes."""
    return out.decode(errors="replace") if isinstance(out, bytes) else out or ""
