"""The hosts of an Ansible inventory, as Ansible itself reads them (`ansible-inventory --list`)."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pickfs.errors import PlanError, ToolMissing

# A host reached with Ansible's local connection runs its modules here, with the controller's environment: left to
# Ansible's discovery they run with the first python on pickfs's own PATH (a virtual environment's, a version
# manager's shim that does not run). It gets the system's Python, as an SSH host's discovery finds it.
LOCAL_CONNECTIONS = ("local", "ansible.builtin.local")
SYSTEM_PYTHON = "/usr/bin/python3"

INSTALL_ANSIBLE = "install it on this machine: pip install 'pickfs[fleet]' (ansible-core), or ./bootstrap.sh test"


@dataclass(frozen=True)
class InventoryHost:
    name: str
    vars: dict[str, Any] = field(default_factory=dict)

    @property
    def workdir(self) -> str:
        return str(self.vars.get("pickfs_workdir") or "/var/tmp/pickfs")


def ansible_tool(name: str) -> str:
    """An Ansible program: beside this Python (its virtual environment) first, then on PATH."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which(name)
    if not found:
        raise ToolMissing(f"{name} (Ansible) is not installed", INSTALL_ANSIBLE)
    return found


def parse_inventory(doc: dict[str, Any]) -> list[InventoryHost]:
    """`ansible-inventory --list` JSON to hosts with their variables, in the inventory's order (pure)."""
    hostvars = doc.get("_meta", {}).get("hostvars", {})
    order: list[str] = []

    def visit(group: str, seen: set[str]) -> None:
        if group in seen:
            return
        seen.add(group)
        entry = doc.get(group, {})
        for h in entry.get("hosts", []):
            if h not in order:
                order.append(h)
        for child in entry.get("children", []):
            visit(child, seen)

    visit("all", set())
    for h in hostvars:
        if h not in order:
            order.append(h)
    return [InventoryHost(h, dict(hostvars.get(h, {}))) for h in order]


MAX_INVENTORY = 1024**2  # bytes: an inventory names hosts, it is small
HOST_NAME = re.compile(r"[A-Za-z0-9_\[][A-Za-z0-9_.@:\[\]-]{0,252}")
_STRICT = {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
           "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True"}


def check_source(inventory: str) -> None:
    """An inventory pickfs hands to Ansible: a directory, or a regular file of UTF-8 text of at most 1 MiB."""
    try:
        st = os.stat(inventory)
    except FileNotFoundError:
        raise PlanError(f"inventory {inventory} not found", "give an Ansible inventory file (INI or YAML)") from None
    except OSError as exc:
        raise PlanError(f"inventory {inventory} cannot be read: {exc.strerror}", "check the path") from None
    if stat.S_ISDIR(st.st_mode):
        return
    if not stat.S_ISREG(st.st_mode):
        raise PlanError(f"inventory {inventory} is not a regular file", "give an Ansible inventory file (INI or YAML)")
    if st.st_size > MAX_INVENTORY:
        raise PlanError(f"inventory {inventory} is {st.st_size} bytes, more than an inventory's 1 MiB",
                        "give the inventory file itself")
    try:
        Path(inventory).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError(f"inventory {inventory} is not UTF-8 text", "save it as UTF-8") from None
    except OSError as exc:
        raise PlanError(f"inventory {inventory} cannot be read: {exc.strerror}", "check the path") from None


def _limit_memory() -> None:  # in the child, before ansible-inventory starts
    resource.setrlimit(resource.RLIMIT_AS, (4 * 1024**3, 4 * 1024**3))


def _why(stderr: str) -> str:
    """Ansible's reason, from its stderr: the parser's own message first."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    parsed = [line for line in lines if "Failed to parse" in line and ":" in line.split("plugin", 1)[-1]]
    return (parsed[0] if parsed else " | ".join(lines[-2:]) or "no message")[:300]


def list_hosts(inventory: str, limit: str | None = None) -> list[InventoryHost]:
    check_source(inventory)
    argv = [ansible_tool("ansible-inventory"), "-i", inventory, "--list"]
    if limit:
        argv += ["--limit", limit]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", env={**os.environ, **_STRICT},
                              timeout=300, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        raise PlanError(f"Ansible took over 5 minutes to read the inventory {inventory}",
                        f"check it with: ansible-inventory -i {inventory} --list") from None
    if proc.returncode != 0:
        ended = f" (ended by signal {-proc.returncode})" if proc.returncode < 0 else ""
        raise PlanError(f"Ansible cannot read the inventory {inventory}{ended}: {_why(proc.stderr)}",
                        f"check it with: ansible-inventory -i {inventory} --list")
    try:
        doc = json.loads(proc.stdout)
        hosts = parse_inventory(doc) if isinstance(doc, dict) else None
    except (ValueError, AttributeError, TypeError):
        hosts = None
    if hosts is None:
        raise PlanError(f"Ansible's list of the inventory {inventory} cannot be read",
                        f"check it with: ansible-inventory -i {inventory} --list")
    if not hosts:
        raise PlanError(f"no hosts in {inventory}" + (f" match --limit {limit}" if limit else ""),
                        "name hosts in the inventory, or check --limit")
    bad = next((h.name for h in hosts if not HOST_NAME.fullmatch(h.name)), None)
    if bad is not None:
        raise PlanError(f"inventory {inventory} names a host {bad!r} that is not a plain host name",
                        "name hosts with letters, digits and . - _ : (set ansible_host for the address)")
    return hosts


def local_interpreters(hosts: list[InventoryHost], system_python: str) -> dict[str, str]:
    """Hosts on Ansible's local connection that name no Python of their own, each with `system_python` (pure)."""
    return {h.name: system_python for h in hosts
            if h.vars.get("ansible_connection") in LOCAL_CONNECTIONS and not h.vars.get("ansible_python_interpreter")}


def local_inventory(hosts: list[InventoryHost], path: Path) -> Path | None:
    """An inventory (JSON, read by Ansible's YAML plugin) giving local-connection hosts the system's Python, to be
    read after the user's; None when no host needs it."""
    python = SYSTEM_PYTHON if Path(SYSTEM_PYTHON).is_file() else sys.executable
    chosen = local_interpreters(hosts, python)
    if not chosen:
        return None
    doc = {"all": {"hosts": {name: {"ansible_python_interpreter": py} for name, py in chosen.items()}}}
    path.write_text(json.dumps(doc, indent=1))
    return path
