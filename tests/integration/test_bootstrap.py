"""What ./bootstrap.sh leaves on the machine: the database servers installed, but no system service of theirs
enabled by the install or running outside pickfs (pickfs starts its own servers on the filesystems under test).

CI runs the suite through ./bootstrap.sh, which installs everything first; bootstrap.sh records the enablement
links it found before it installed anything (.bootstrap/enabled-before), so a machine whose own services were
enabled before (its owner's) is judged by what the install added, and the machine is never changed here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import IS_ROOT, UNDER_CI

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
    assert groups_for("pickfs", "run", "--plan", "examples/r2-postgresql.toml") == ["BASE", "SERVERS", "CRASH"]
    assert groups_for("pickfs", "report", "--html", "r.html") == ["BASE"]  # builds nothing
    assert groups_for("test") == sorted(groups, key=["BASE", "SERVERS", "CRASH", "BROWSER", "FLEET"].index)


# A throwaway copy of this machine: an overlay of / whose writes land on a tmpfs, in private mount and PID
# namespaces (all of it gone when the shell ends; killall in a package's stop script reaches no process of the
# machine). Inside, mariadb-server and firebird3.0-server are purged (no service start or stop allowed meanwhile),
# the policy-rc.d removed, and install_quietly.sh installs them again as bootstrap.sh and the fleet hosts do.
SANDBOX = r"""
set -e
B=$1
mount -t tmpfs tmpfs "$B/t"
mkdir "$B/t/u" "$B/t/w"
mount -t overlay overlay -o "lowerdir=/,upperdir=$B/t/u,workdir=$B/t/w" "$B/m"
mount -t proc proc "$B/m/proc"
mount --rbind /dev "$B/m/dev"
mount --rbind /sys "$B/m/sys"
mount -t tmpfs tmpfs "$B/m/run"
mount -t tmpfs tmpfs "$B/m/tmp"
cp --remove-destination "$(readlink -f /etc/resolv.conf)" "$B/m/etc/resolv.conf"
cp "$2" "$B/m/tmp/install_quietly.sh"
exec chroot "$B/m" /bin/bash -c '
export DEBIAN_FRONTEND=noninteractive
links() { { find /etc/systemd/system -mindepth 2 -maxdepth 2 -type l -path "*.wants/*"; \
            find /etc/rc[0-6S].d -maxdepth 1 -type l -name "S*"; } 2>/dev/null | sort; }
printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
apt-get purge -y -q mariadb-server firebird3.0-server > /tmp/purge.log 2>&1 || { tail -3 /tmp/purge.log >&2; exit 9; }
rm -f /usr/sbin/policy-rc.d
links > /tmp/before
rc=0
sh /tmp/install_quietly.sh mariadb-server firebird3.0-server > /tmp/out 2> /tmp/err || rc=$?
links > /tmp/after
sleep 2
servers=$(for c in /proc/[0-9]*/comm; do cat "$c" 2>/dev/null; done | grep -E "^(mariadbd|mysqld|mysqld_safe|fbguard|firebird)$" | tr "\n" " ")
python3 -c "import json, sys; print(json.dumps({\"rc\": $rc, \"out\": open(\"/tmp/out\").read(), \"err\": open(\"/tmp/err\").read()[-3000:], \"before\": open(\"/tmp/before\").read().split(), \"after\": open(\"/tmp/after\").read().split(), \"servers\": sys.argv[1].split(), \"policy\": __import__(\"os\").path.exists(\"/usr/sbin/policy-rc.d\")}))" "$servers"
'
"""


@pytest.mark.skipif(not IS_ROOT and not UNDER_CI, reason="needs root: namespaces, overlay, apt")
def test_installing_the_servers_in_a_copy_of_this_machine_starts_and_enables_none_of_their_services():
    missing = [t for t in ("unshare", "chroot", "apt-get") if not shutil.which(t)]
    assert IS_ROOT and not missing, f"needs root and {missing}"
    base = Path("/var/tmp") / f"pickfs-test-sandbox-{uuid.uuid4().hex[:8]}"
    (base / "t").mkdir(parents=True)
    (base / "m").mkdir()
    try:
        proc = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "bash", "-c",
                               SANDBOX, "sandbox", str(base), str(REPO / "src/pickfs/fleet/install_quietly.sh")],
                              capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["rc"] == 0 and "installed: mariadb-server firebird3.0-server" in found["out"], found["err"]
    added = sorted(set(found["after"]) - set(found["before"]))
    assert [link for link in added if DATABASE.search(link)] == [], added
    assert not any("mariadb" in link for link in found["before"])  # purged in the copy: its links were gone
    assert "mariadb.service will not start at boot" in found["err"]  # the install made the link; it was undone
    assert found["servers"] == [], f"database servers started by the install: {found['servers']}"
    assert found["policy"] is False  # no policy-rc.d before, none after
