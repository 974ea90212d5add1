"""What ./bootstrap.sh leaves on the machine: the database servers installed, but no system service of theirs
enabled by the install or running outside pickfs (pickfs starts its own servers on the filesystems under test).

CI runs the suite through ./bootstrap.sh, which installs everything first; bootstrap.sh records the enablement
links it found before it installed anything (.bootstrap/enabled-before), so a machine whose own services were
enabled before (its owner's) is judged by what the install added, and the machine is never changed here."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import UNDER_CI

REPO = Path(__file__).resolve().parents[2]
RECORD = REPO / ".bootstrap" / "enabled-before"
DATABASE = re.compile(r"(mariadb|mysql|postgresql|firebird)", re.IGNORECASE)
SYSTEM_PORTS = {3306: "MariaDB", 5432: "PostgreSQL", 3050: "Firebird"}  # pickfs's own servers listen on none
SYSTEM_DATA = ("/var/lib/mysql", "/var/lib/postgresql", "/etc/postgresql", "/var/lib/firebird")


def enablement_links() -> set[str]:
    """systemd's wants/requires links and SysV's start links, as bootstrap.sh lists them."""
    found = {str(p) for pattern in ("*.wants/*", "*.requires/*") for p in Path("/etc/systemd/system").glob(pattern)
             if p.is_symlink()}
    for d in Path("/etc").glob("rc[0-6S].d"):
        found |= {str(p) for p in d.glob("S*") if p.is_symlink()}
    return found


def listening_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def system_servers() -> list[str]:
    """Database server processes that are not pickfs's: Firebird's guard (pickfs never runs it), or a server on
    the system's own data directory."""
    out = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            comm = (proc / "comm").read_text().strip()
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd") if comm != "fbguard" else ""
        except OSError:
            continue
        if comm == "fbguard" or (comm in ("mariadbd", "mysqld", "postgres", "firebird")
                                 and any(cwd.startswith(d) or f" {d}" in args or f"={d}" in args
                                         for d in SYSTEM_DATA)):
            out.append(f"{proc.name} {args.strip()}")
    return out


@pytest.fixture(scope="module")
def record() -> set[str]:
    if not RECORD.is_file():
        if UNDER_CI:
            pytest.fail(f"{RECORD} is missing: run the tests through ./bootstrap.sh test", pytrace=False)
        pytest.skip("./bootstrap.sh has not run in this clone")
    return set(RECORD.read_text().split())


def test_the_install_enabled_no_database_service(record):
    added = sorted(link for link in enablement_links() - record if DATABASE.search(Path(link).name))
    assert added == [], f"bootstrap.sh's install left these database services enabled at boot: {added}"


@pytest.mark.skipif(os.geteuid() != 0 and not UNDER_CI, reason="reading other users' processes needs root")
def test_no_database_server_runs_outside_pickfs(record):
    ports = {port: name for port, name in SYSTEM_PORTS.items() if port in listening_ports()}
    assert ports == {}, f"a system database server listens: {ports}"
    assert system_servers() == []


def groups_for(*args: str) -> list[str]:
    """bootstrap.sh's own choice of package groups for a job (its function, run by bash)."""
    text = (REPO / "bootstrap.sh").read_text()
    function = re.search(r"^groups_for\(\) \{.*?^\}", text, re.MULTILINE | re.DOTALL).group(0)
    out = subprocess.run(["bash", "-c", f'{function}\ngroups_for "$@"', "bash", *args], capture_output=True,
                         text=True, check=True).stdout
    return out.split()


def test_bootstrap_installs_what_the_job_needs_and_says_why():
    text = (REPO / "bootstrap.sh").read_text()
    groups = re.findall(r"^PKG_([A-Z]+)=\(", text, re.MULTILINE)
    assert sorted(groups) == sorted(re.findall(r"^WHY_([A-Z]+)=", text, re.MULTILINE))  # each group says why
    assert groups_for("run") == ["BASE"]  # the default job, SQLite: no database server
    assert groups_for("run", "--fs", "ext4,xfs", "--max-time", "2m") == ["BASE"]
    assert groups_for("run", "--workload", "pgbench") == ["BASE", "SERVERS"]
    assert groups_for("run", "--crash-states", "3") == ["BASE", "CRASH"]
    assert groups_for("pickfs", "crashtest") == ["BASE", "SERVERS", "CRASH"]
    assert groups_for("test") == sorted(groups, key=["BASE", "SERVERS", "CRASH", "BROWSER", "FLEET"].index)
