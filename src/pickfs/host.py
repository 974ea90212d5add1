"""Facts about the machine a run was measured on, stored with every run."""

from __future__ import annotations

import os
import platform
import socket
import sqlite3
import subprocess
import sys
from typing import Any

from pickfs import __version__
from pickfs.fingerprint import fingerprint
from pickfs.stack.filesystems import KNOWN, which
from pickfs.sysinfo import cpu_model, mem_total, os_name, read_text


def _tool_version(tool: str) -> str | None:
    path = which(tool)
    if not path:
        return None
    try:
        p = subprocess.run([path, "-V"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stdout + p.stderr).strip().splitlines()
    return text[0] if text else None


def collect(workdir: str) -> dict[str, Any]:
    tools = {}
    for ft in KNOWN.values():
        if ft.mkfs:
            version = _tool_version(ft.mkfs[0])
            if version:
                tools[ft.mkfs[0]] = version
    fleet = {"fleet": os.environ["PICKFS_FLEET"]} if os.environ.get("PICKFS_FLEET") else {}
    return {
        **fleet,
        "name": os.environ.get("PICKFS_HOST_NAME") or socket.gethostname(),  # a fleet host's inventory name
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
        "tools": tools,
        "fingerprint": fingerprint(workdir),  # the storage stack under the images
    }
