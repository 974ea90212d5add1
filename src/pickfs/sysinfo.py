"""Small readers of machine facts (/proc, /etc/os-release) shared by host facts and fingerprints."""

from __future__ import annotations

import platform
from pathlib import Path


def read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def cpu_model(cpuinfo: str) -> str:
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def mem_total(meminfo: str) -> int:
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def os_name(os_release: str) -> str:
    for line in os_release.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return "unknown"
