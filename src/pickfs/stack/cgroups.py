"""The production box's memory: a memory-limited control group for a configuration's server and client.

Each configuration gets its own group (`pickfs-<id>`), created with its limit before its server
starts. pickfs joins the group while it starts the server, lays out the data and runs each slice,
so the server, the client and every page they bring into the page cache are charged to it: buffer
pool and page cache together fit the limit, as on a box with that much memory. The cgroup v1
memory controller is used where it is mounted (a group below pickfs's own), else cgroup v2 (a group
at the root of the unified hierarchy, whose memory controller must be enabled there). Swap is
limited to nothing, so the limit cannot be escaped into swap.

Every group is written to the ledger before it is made; undoing it moves whatever is left in it to
its parent and removes it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pickfs.errors import PickfsError
from pickfs.stack.ledger import Ledger
from pickfs.stack.resources import ResourceKind, held

CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "pickfs-"


class CgroupUnavailable(PickfsError):
    """This machine cannot limit a group's memory."""


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1: the v1 memory controller; 2: the unified hierarchy
    mount: Path  # where that hierarchy is mounted
    parent: str  # the cgroup new groups are made in, relative to `mount` ("/" for the root)
    own: str  # pickfs's own cgroup in that hierarchy, where it goes back to


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """/proc/<pid>/cgroup -> {controller: path}; the v2 entry ("0::/x") under "" (pure)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            out[controller] = parts[2]
    return out


def choose_hierarchy(proc_cgroup: str, v1_memory: bool, v2_controllers: str) -> Hierarchy | None:
    """Which hierarchy limits memory here (pure): the v1 memory controller when it is mounted (a group below
    pickfs's own), else cgroup v2 when its root offers the memory controller; None when neither."""
    paths = parse_proc_cgroup(proc_cgroup)
    if v1_memory and "memory" in paths:
        own = paths["memory"]
        return Hierarchy(1, CGROUP_ROOT / "memory", own, own)
    if "memory" in v2_controllers.split() and "" in paths:
        return Hierarchy(2, CGROUP_ROOT, "/", paths[""])
    return None


def hierarchy() -> Hierarchy | None:
    """This machine's memory hierarchy, read from /proc and /sys."""
    try:
        proc = Path("/proc/self/cgroup").read_text()
    except OSError:
        return None
    v1 = (CGROUP_ROOT / "memory" / "memory.limit_in_bytes").exists()
    try:
        v2 = (CGROUP_ROOT / "cgroup.controllers").read_text()
    except OSError:
        v2 = ""
    return choose_hierarchy(proc, v1, v2)


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "limiting memory needs root (a control group is made for each configuration)"
    if hierarchy() is None:
        return ("no memory controller: neither cgroup v1's memory hierarchy nor cgroup v2 with memory enabled "
                "at its root is mounted under /sys/fs/cgroup")
    return None


def _under(h: Hierarchy, relative: str) -> Path:
    return h.mount / relative.lstrip("/")


def limit_files(version: int, limit: int) -> list[tuple[str, str]]:
    """The files that set a group's limit, in the order they must be written (pure): memory first, then
    memory and swap together (v1 refuses a memory+swap limit below the memory limit)."""
    if version == 1:
        return [("memory.limit_in_bytes", str(limit)), ("memory.memsw.limit_in_bytes", str(limit))]
    return [("memory.max", str(limit)), ("memory.swap.max", "0")]


@dataclass(frozen=True)
class MemoryGroup:
    path: Path
    version: int
    origin: Path  # the group pickfs goes back to after joining this one
    limit: int

    def _move(self, group: Path) -> None:
        (group / "cgroup.procs").write_text(f"{os.getpid()}\n")

    @contextmanager
    def joined(self) -> Iterator[None]:
        """pickfs in the group (and so whatever it starts meanwhile); back in its own group after."""
        self._move(self.path)
        try:
            yield
        finally:
            self._move(self.origin)

    def peak_bytes(self) -> int | None:
        """The most memory the group held, page cache included."""
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        try:
            return int((self.path / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None


@contextmanager
def memory_limited(ledger: Ledger, limit: int) -> Iterator[MemoryGroup]:
    """A new group limited to `limit` bytes (ledger-tracked), removed on exit once its processes are gone."""
    h = hierarchy()
    if h is None:
        raise CgroupUnavailable(unavailable_reason() or "no memory controller",
                                "drop --memory, or run on a host with the cgroup memory controller")
    path = _under(h, h.parent) / f"{PREFIX}{uuid.uuid4().hex[:12]}"
    with held(ledger, CGROUP, path=str(path), version=h.version):
        try:
            path.mkdir(mode=0o755)
            for i, (name, value) in enumerate(limit_files(h.version, limit)):
                target = path / name
                if i == 0 and not target.exists():  # the memory limit itself must be there to be set
                    raise CgroupUnavailable(
                        f"the group {path} has no {name}: the memory controller is not enabled for it",
                        "enable it (v2: echo +memory > /sys/fs/cgroup/cgroup.subtree_control), or drop --memory")
                if target.exists():  # memsw exists only with swap accounting; swap.max only with swap
                    target.write_text(value)
        except OSError as exc:
            raise CgroupUnavailable(f"could not limit {path}'s memory: {exc.strerror or exc}",
                                    "drop --memory, or check the cgroup memory controller") from None
        yield MemoryGroup(path, h.version, _under(h, h.own), limit)


def cgroup_refusal(path: object) -> str | None:
    """Why a ledger entry's group is not pickfs's: not a pickfs- group under /sys/fs/cgroup."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return f"{path!r} is not an absolute path"
    p = Path(os.path.normpath(path))
    if CGROUP_ROOT not in p.parents or not p.name.startswith(PREFIX) or ".." in Path(path).parts:
        return f"{path} is not a pickfs- control group under {CGROUP_ROOT}"
    return None


def undo_cgroup(path: str, version: int) -> None:
    """Move what is left in the group to its parent (v2: the root) and remove it."""
    group = Path(path)
    if not group.is_dir():
        return
    parent = CGROUP_ROOT if version == 2 else group.parent
    try:
        pids = (group / "cgroup.procs").read_text().split()
    except OSError:
        pids = []
    for pid in pids:
        try:
            (parent / "cgroup.procs").write_text(f"{pid}\n")
        except OSError:
            pass  # it exited meanwhile
    for _ in range(50):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    group.rmdir()


# A memory-limited group, in the ledger: pickfs's only when it is a pickfs- group under /sys/fs/cgroup.
CGROUP = ResourceKind("cgroup", lambda e, _workdir: cgroup_refusal(e.get("path")),
                      lambda e: undo_cgroup(e.get("path"), int(e.get("version", 1))))
