"""The hosts of an Ansible inventory, as Ansible itself reads them (`ansible-inventory --list`)."""

from __future__ import annotations

import json
import os
import shutil
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


def list_hosts(inventory: str, limit: str | None = None) -> list[InventoryHost]:
    if not Path(inventory).exists():
        raise PlanError(f"inventory {inventory} not found", "give an Ansible inventory file (INI or YAML)")
    argv = [ansible_tool("ansible-inventory"), "-i", inventory, "--list"]
    if limit:
        argv += ["--limit", limit]
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "ANSIBLE_NOCOLOR": "1"})
    if proc.returncode != 0:
        tail = " | ".join(line.strip() for line in proc.stderr.strip().splitlines()[-2:])
        raise PlanError(f"Ansible cannot read the inventory {inventory}: {tail}", "check it with: ansible-inventory "
                        f"-i {inventory} --list")
    hosts = parse_inventory(json.loads(proc.stdout))
    if not hosts:
        raise PlanError(f"no hosts in {inventory}" + (f" match --limit {limit}" if limit else ""),
                        "name hosts in the inventory, or check --limit")
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
