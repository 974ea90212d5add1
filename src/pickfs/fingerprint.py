"""A fingerprint of the storage stack under a path, as flat key -> value pairs.

Everything that changes how a database's writes reach the disk: kernel, filesystem and its
mount options, the block-device chain (partition, device-mapper or md layers, disk) with
model, rotational, write cache, scheduler and queue depth, and the installed database
servers with their durability settings (PostgreSQL, MariaDB/MySQL, Firebird, SQLite). The
options in force are read from the filesystem's driver where it lists them all (ext:
/proc/fs/ext4/<dev>/options), not only those mountinfo lists (mount.effective.*)."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

from pickfs import databases
from pickfs.stack.filesystems import legacy_default_notes, which
from pickfs.stack.mountinfo import mount_containing, parse_mountinfo, read_effective_options
from pickfs.sysinfo import cpu_model, mem_total, os_name, read_text

_QUEUE = ("scheduler", "write_cache", "rotational", "nr_requests", "logical_block_size", "physical_block_size",
          "discard_max_bytes", "max_sectors_kb")

def _device_chain(name: str) -> list[str]:
    """The device, then what it stands on: dm/md slaves, or the whole disk of a partition."""
    chain, todo = [], [name]
    while todo:
        n = todo.pop(0)
        if n in chain or not Path(f"/sys/class/block/{n}").exists():
            continue
        chain.append(n)
        slaves = sorted(p.name for p in Path(f"/sys/class/block/{n}/slaves").glob("*"))
        if slaves:
            todo.extend(slaves)
        elif (Path(f"/sys/class/block/{n}") / "partition").exists():
            todo.append(Path(os.path.realpath(f"/sys/class/block/{n}")).parent.name)
    return chain


def _device_facts(prefix: str, name: str) -> dict[str, str]:
    base = Path(f"/sys/class/block/{name}")
    out = {f"{prefix}.name": name}
    if (base / "partition").exists():
        out[f"{prefix}.kind"] = "partition"
    elif name.startswith("dm-"):
        out[f"{prefix}.kind"] = "device-mapper " + read_text(str(base / "dm/name")).strip()
    elif name.startswith("md"):
        out[f"{prefix}.kind"] = "md raid " + read_text(str(base / "md/level")).strip()
    elif name.startswith("loop"):
        out[f"{prefix}.kind"] = "loop"
        out[f"{prefix}.backing_file"] = read_text(str(base / "loop/backing_file")).strip()
        out[f"{prefix}.direct_io"] = read_text(str(base / "loop/dio")).strip()
    else:
        out[f"{prefix}.kind"] = "disk"
    model = read_text(str(base / "device/model")).strip()
    if model:
        out[f"{prefix}.model"] = model
    size = read_text(str(base / "size")).strip()
    if size:
        out[f"{prefix}.size_bytes"] = str(int(size) * 512)
    queue = base / "queue"
    for key in _QUEUE:
        value = read_text(str(queue / key)).strip()
        if value:
            m = re.search(r"\[([^\]]+)\]", value) if key == "scheduler" else None
            out[f"{prefix}.{key}"] = m.group(1) if m else value
    return out


def _databases() -> dict[str, str]:
    """Each database's installed packages' versions, then what databases/ reads of its configuration."""
    each = [db for db in databases.DATABASES.values() if db.name == db.database]  # one entry per database
    out: dict[str, str] = {}
    tool = which("dpkg-query")
    if tool:
        patterns = [p for db in each for p in db.packages]
        proc = subprocess.run([tool, "-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\\n", *patterns],
                              capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[2].startswith("ii"):
                out[f"db.{parts[0]}.version"] = parts[1]
    for db in each:
        out.update(db.installed_settings(dict(out)))
    return out


def effective_keys(fstype: str, effective: tuple[str, ...]) -> dict[str, str]:
    """mount.effective.KEY -> value for the options in force (pure); barrier spelled on/off either way."""
    out: dict[str, str] = {}
    for opt in effective:
        key, _, value = opt.partition("=")
        if key in ("barrier", "nobarrier"):
            out["mount.effective.barrier"] = "off" if key == "nobarrier" or value == "0" else "on"
            continue
        out[f"mount.effective.{key}"] = value or "on"
    return out


def fingerprint(path: str = "/") -> dict[str, str]:
    p = Path(path).resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    fp = {
        "host.kernel": platform.release(),
        "host.os": os_name(read_text("/etc/os-release")),
        "host.cpu_model": cpu_model(read_text("/proc/cpuinfo")),
        "host.cpus": str(os.cpu_count()),
        "host.memory_bytes": str(mem_total(read_text("/proc/meminfo"))),
        "path": str(p),
    }
    m = mount_containing(parse_mountinfo(read_text("/proc/self/mountinfo")), str(p))
    if m:
        fp.update({"mount.fstype": m.fstype, "mount.source": m.source, "mount.mountpoint": m.mountpoint})
        for opt in m.options:
            key, _, value = opt.partition("=")
            fp[f"mount.option.{key}"] = value or "on"
        name = None
        if m.source.startswith("/dev/"):
            name = Path(os.path.realpath(m.source)).name
        elif m.major_minor and Path(f"/sys/dev/block/{m.major_minor}").exists():
            name = Path(os.path.realpath(f"/sys/dev/block/{m.major_minor}")).name
        effective = read_effective_options(m.fstype, m.options, f"/dev/{name}" if name else None)
        fp.update(effective_keys(m.fstype, effective))
        for i, note in enumerate(legacy_default_notes(m.fstype, effective)):
            fp[f"note.{i}"] = note
        for i, dev in enumerate(_device_chain(name) if name else []):
            fp.update(_device_facts(f"device.{i}", dev))
    fp.update(_databases())
    return fp
