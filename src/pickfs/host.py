"""Facts about the machine a run was measured on, stored with every run."""

from __future__ import annotations

import os
import platform
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from pickfs import __version__
from pickfs.fingerprint import fingerprint
from pickfs.stack.filesystems import KNOWN, which
from pickfs.stack.mountinfo import parse_mountinfo
from pickfs.sysinfo import cpu_model, mem_total, os_name, read_text


def _tool_version(tool: str) -> str | None:
    path = which(tool)
    if not path:
        return None
    flag = "-V"
    try:
        p = subprocess.run([path, flag], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stdout + p.stderr).strip().splitlines()
    return text[0] if text else None


def _backing(workdir: str) -> dict[str, Any]:
    """The filesystem and disk under the work directory, where images live."""
    path = Path(workdir)
    while not path.exists() and path != path.parent:
        path = path.parent
    best = None
    for e in parse_mountinfo(read_text("/proc/self/mountinfo")):
        mp = e.mountpoint.rstrip("/") or "/"
        if str(path) == mp or str(path).startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(e.mountpoint) >= len(best.mountpoint):
                best = e
    if best is None:
        return {}
    out: dict[str, Any] = {"mountpoint": best.mountpoint, "fstype": best.fstype, "source": best.source,
                           "options": list(best.options)}
    disk = Path(best.source).name
    queue = Path(f"/sys/block/{disk}/queue")
    if queue.is_dir():
        out.update({
            "disk": disk,
            "rotational": read_text(str(queue / "rotational")).strip(),
            "scheduler": read_text(str(queue / "scheduler")).strip(),
            "write_cache": read_text(str(queue / "write_cache")).strip(),
            "model": read_text(f"/sys/block/{disk}/device/model").strip() or None,
        })
    return out


def collect(workdir: str) -> dict[str, Any]:
    tools = {}
    for ft in KNOWN.values():
        if ft.mkfs:
            version = _tool_version(ft.mkfs[0])
            if version:
                tools[ft.mkfs[0]] = version
    return {
        "hostname": socket.gethostname(),
        "os": os_name(read_text("/etc/os-release")),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "cpu_model": cpu_model(read_text("/proc/cpuinfo")),
        "cpus": os.cpu_count(),
        "memory_bytes": mem_total(read_text("/proc/meminfo")),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "pickfs": __version__,
        "workdir": workdir,
        "workdir_backing": _backing(workdir),
        "tools": tools,
        "fingerprint": fingerprint(workdir),
    }
