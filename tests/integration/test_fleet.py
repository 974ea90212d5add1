"""pickfs fleet against real SSH servers: each host a network namespace made here, with its own sshd on its own
address and its own pickfs work directory (host a's on ext4, host b's on ext3: R2's dev box and CI box).

Real Ansible, real async jobs, real runs on loop devices; a host failing on purpose; Ctrl-C on the controller.
Everything made here (namespaces, sshd, mounts, images) is undone even when a test fails."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import IS_ROOT, ledger_entries, loops_under, mounts_under

SSHD = "/usr/sbin/sshd"
MISSING = [t for t in ("ip", "ssh", "ssh-keygen", "mkfs.ext3", "mkfs.ext4") if not shutil.which(t)]
MISSING += [] if Path(SSHD).exists() else ["sshd (openssh-server)"]
try:
    import ansible  # noqa: F401
except ImportError:
    MISSING.append("ansible-core (pip install '.[test]')")
if os.environ.get("CI") and (MISSING or not IS_ROOT):
    pytest.fail(f"the fleet tests need root and {', '.join(MISSING) or 'nothing else'}", pytrace=False)
pytestmark = pytest.mark.skipif(bool(MISSING) or not IS_ROOT, reason=f"needs root and {', '.join(MISSING)}")

PLAN = """
fs = ["ext4", "ext4-nobarrier"]
baseline = "ext4"
[target]
size = "384M"
[[workload]]
name = "sqlite-tpcb"
[method]
blocks = 1
rounds = 4
warmup = 0
"""


def sh(*argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, **kw)


class Host:
    """A network namespace with its own sshd, reached from here on its own address."""

    def __init__(self, root: Path, tag: str, index: int, name: str, fstype: str | None) -> None:
        self.name, self.ns = name, f"pf{tag}{name}"
        self.addr, self.peer = f"10.{200 + index}.{int(tag[:2], 16)}.2", f"10.{200 + index}.{int(tag[:2], 16)}.1"
        self.dir = root / name
        self.dir.mkdir()
        self.mount: Path | None = None
        self.workdir = self.dir / "pickfs"
        if fstype:  # the host's own filesystem under its work directory
            image, self.mount = self.dir / "disk.img", self.dir / "disk"
            sh("truncate", "-s", "2G", str(image))
            sh(f"mkfs.{fstype}", "-q", "-F", str(image))
            self.mount.mkdir()
            sh("mount", "-o", "loop", str(image), str(self.mount))
            self.workdir = self.mount / "pickfs"
        self.veth = f"pv{tag}{name}"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.veth, "type", "veth", "peer", "name", f"{self.veth}p")
        sh("ip", "link", "set", f"{self.veth}p", "netns", self.ns)
        sh("ip", "addr", "add", f"{self.peer}/30", "dev", self.veth)
        sh("ip", "link", "set", self.veth, "up")
        for cmd in (["ip", "addr", "add", f"{self.addr}/30", "dev", f"{self.veth}p"],
                    ["ip", "link", "set", f"{self.veth}p", "up"], ["ip", "link", "set", "lo", "up"]):
            sh("ip", "netns", "exec", self.ns, *cmd)

    def start_sshd(self, client_key: Path) -> None:
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / "hostkey"))
        (self.dir / "authorized_keys").write_text(Path(f"{client_key}.pub").read_text())
        self.pidfile = self.dir / "sshd.pid"
        (self.dir / "sshd_config").write_text(
            f"ListenAddress {self.addr}\nPort 22\nHostKey {self.dir / 'hostkey'}\n"
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {self.pidfile}\nSubsystem sftp internal-sftp\nMaxStartups 100\n")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        # `ip netns exec` gives the host its own mount namespace (mounts made there stay there, as on a real host);
        # root's ~/.bashrc is hidden in it, so a shell set-up of this machine (pyenv's rehash lock, say) cannot
        # slow or hang the sessions: a fresh host has none.
        empty = self.dir / "empty-bashrc"
        empty.write_text("")
        hide = f"mount --bind {empty} /root/.bashrc; " if Path("/root/.bashrc").is_file() else ""
        sh("ip", "netns", "exec", self.ns, "sh", "-c", f"{hide}exec {SSHD} -f {self.dir / 'sshd_config'}")
        for _ in range(50):
            if self.pidfile.exists():
                return
            time.sleep(0.1)
        raise AssertionError(f"sshd of {self.name} did not start")

    def mounts(self) -> list[str]:
        """Mount points under this host's directory, as the host sees them (its own mount namespace)."""
        pid = self.sshd_pid()
        table = Path(f"/proc/{pid}/mounts").read_text() if pid else Path("/proc/mounts").read_text()
        return [line.split()[1] for line in table.splitlines() if line.split()[1].startswith(str(self.workdir))]

    def in_host(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """A command inside this host's namespaces (its network and its mounts)."""
        pid = self.sshd_pid()
        return subprocess.run(["nsenter", "-t", str(pid), "-m", "-n", *argv], capture_output=True, text=True,
                              timeout=timeout)

    def processes(self) -> list[int]:
        out = sh("ip", "netns", "pids", self.ns, check=False).stdout
        return [int(p) for p in out.split()]

    def pickfs_processes(self) -> list[str]:
        """pickfs jobs of this host still running (its sshd and sessions aside)."""
        found = []
        for pid in self.processes():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "pickfs" in cmd and not cmd.startswith("sshd"):
                found.append(cmd)
        return found

    def remove(self) -> None:
        """Whatever a failed test left: pickfs ended as a user would (SIGTERM, then pickfs cleanup), then the rest."""
        for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, 5)):
            pids = [p for p in self.processes() if p != self.sshd_pid()]
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while pids and any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
                time.sleep(0.5)
        if self.workdir.is_dir() and self.sshd_pid():
            self.in_host(sys.executable, "-m", "pickfs", "cleanup", "--workdir", str(self.workdir))
        for pid in self.processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        sh("ip", "netns", "del", self.ns, check=False)
        sh("ip", "link", "del", self.veth, check=False)
        for mp in reversed(mounts_under(self.dir)):
            if sh("umount", mp, check=False).returncode:
                sh("umount", "-l", mp, check=False)
        for line in loops_under(self.dir):
            sh("losetup", "-d", line.split(":")[0], check=False)

    def sshd_pid(self) -> int | None:
        try:
            return int(self.pidfile.read_text())
        except (AttributeError, OSError, ValueError):
            return None


@pytest.fixture(scope="module")
def fleet():
    """Hosts a (work directory on ext4) and b (on ext3), each with its own sshd; an inventory for them."""
    tag = uuid.uuid4().hex[:4]
    root = Path("/var/tmp") / f"pickfs-fleet-test-{tag}"
    root.mkdir(mode=0o700)
    hosts: list[Host] = []
    try:
        key = root / "id"
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        for i, (name, fstype) in enumerate((("a", "ext4"), ("b", "ext3"))):
            hosts.append(Host(root, tag, i, name, fstype))
            hosts[-1].start_sshd(key)
        yield Fleet(root, key, hosts)
    finally:
        for h in hosts:
            h.remove()
        local = root / "local" / "pickfs"
        if local.is_dir():  # what the local-connection host's run left, had the test failed (its own directory)
            subprocess.run([sys.executable, "-m", "pickfs", "cleanup", "--workdir", str(local)], capture_output=True,
                           timeout=300)
        deadline = time.monotonic() + 300  # a loop mount lets go of its device once no namespace holds it (slow: minutes under load)
        while (mounts_under(root) or loops_under(root)) and time.monotonic() < deadline:
            time.sleep(0.5)
        leftovers = mounts_under(root), loops_under(root)
        shutil.rmtree(root, ignore_errors=True)
        assert leftovers == ([], []), f"left behind: {leftovers}"


class Fleet:
    def __init__(self, root: Path, key: Path, hosts: list[Host]) -> None:
        self.root, self.key, self.hosts = root, key, hosts
        self.controller = root / "controller"
        (root / "plan.toml").write_text(PLAN)
        self.plan = root / "plan.toml"

    def inventory(self, extra: str = "", name: str = "hosts.ini", **workdirs: str) -> Path:
        lines = ["[lab]"]
        for h in self.hosts:
            lines.append(f"{h.name} ansible_host={h.addr} pickfs_workdir={workdirs.get(h.name, h.workdir)}")
        lines.append(extra)
        lines += ["[lab:vars]", "ansible_python_interpreter=/usr/bin/python3",
                  "[all:vars]", "ansible_user=root", f"ansible_ssh_private_key_file={self.key}",
                  "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                  "-o ConnectTimeout=5'"]
        path = self.root / name
        path.write_text("\n".join(lines) + "\n")
        return path

    def env(self, path_first: Path | None = None) -> dict[str, str]:
        first = f"{path_first}:" if path_first else ""
        return {**os.environ, "PICKFS_WORKDIR": str(self.controller), "CI": "1",
                "PATH": f"{first}{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}

    def pickfs(self, *args: str, timeout: float = 600, path_first: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pickfs", *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env(path_first))

    def shim_dir(self) -> Path:
        """A directory for the front of the controller's PATH holding a python3.13 that does not run, as a version
        manager's shim for a version not selected does (pyenv's: "pyenv: python3.13: command not found")."""
        shims = self.root / "shims"
        shims.mkdir(exist_ok=True)
        shim = shims / "python3.13"
        shim.write_text("#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n")
        shim.chmod(0o755)
        return shims

    @property
    def local_workdir(self) -> Path:
        """The work directory of the host reached with Ansible's local connection: this machine itself."""
        return self.root / "local" / "pickfs"

    def assert_clean(self) -> None:
        for h in self.hosts:
            assert h.pickfs_processes() == [], f"{h.name}: pickfs still running"
            assert ledger_entries(h.workdir) == [], f"{h.name}: ledger not empty"
            assert h.mounts() == [], f"{h.name}: mounts left"
            assert loops_under(h.workdir) == [], f"{h.name}: loop devices left"


def cmdlines() -> list[str]:
    out = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            out.append(path.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return out


def results(path: Path, sql: str) -> list[tuple]:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_fleet_run_merges_each_hosts_runs_and_keeps_them_when_another_host_fails(fleet):
    # c is in the inventory but its work directory is a symbolic link: pickfs refuses it there, as it would here;
    # d has no SSH server at all; e needs a Debian package no registry it can reach has; l is this machine, reached
    # with Ansible's local connection (no SSH), while the controller's PATH offers first a python that does not run.
    (fleet.root / "local").mkdir(mode=0o700)
    c_target = fleet.root / "c-real"
    c_target.mkdir()
    (fleet.root / "c-link").symlink_to(c_target)
    extra = (f"c ansible_host={fleet.hosts[0].addr} pickfs_workdir={fleet.root / 'c-link'}\n"
             f"d ansible_host=10.254.{int(fleet.root.name[-4:-2], 16)}.9\n"
             f"e ansible_host={fleet.hosts[1].addr} pickfs_workdir={fleet.root / 'e'} "
             """pickfs_extra_packages='["pickfs-no-such-package"]'\n"""
             f"[here]\nl ansible_connection=local pickfs_workdir={fleet.local_workdir}")  # no Python named
    inventory = fleet.inventory(extra)
    t0 = time.monotonic()
    r = fleet.pickfs("fleet", "run", "-i", str(inventory), "--plan", str(fleet.plan), "--poll", "2s",
                     path_first=fleet.shim_dir())
    wall = time.monotonic() - t0
    print(r.stderr[-8000:])
    assert r.returncode == 1, r.stderr
    assert "[a] plan started" in r.stderr and "[b] plan started" in r.stderr  # progress per host
    db = fleet.controller / "results.db"
    fleets = results(db, "SELECT id, status, hosts_json FROM fleets")
    assert len(fleets) == 1 and fleets[0][1] == "partial"
    hosts = {h["name"]: h for h in json.loads(fleets[0][2])}
    assert hosts["a"]["status"] == hosts["b"]["status"] == "complete"
    assert hosts["l"]["status"] == "complete", hosts["l"]["error"]  # the local connection, as an SSH host
    assert hosts["c"]["status"] == "failed" and "symbolic link" in hosts["c"]["error"]
    assert hosts["d"]["status"] == "unreachable" and hosts["d"]["error"]
    assert hosts["e"]["status"] == "failed" and "missing Debian packages: pickfs-no-such-package" in hosts["e"]["error"]
    assert "symbolic link" in r.stderr  # the failed host's error, reported
    runs = {row[0]: json.loads(row[1]) for row in results(db, "SELECT id, host_json FROM runs")}
    assert {h["name"] for h in runs.values()} >= {"a", "b", "l"}
    for name in ("a", "b", "l"):
        run_id = hosts[name]["run_id"]
        assert runs[run_id]["name"] == name and runs[run_id]["fleet"] == fleets[0][0]
        if name != "l":
            assert runs[run_id]["fingerprint"]["mount.fstype"] == {"a": "ext4", "b": "ext3"}[name]
        measured = results(db, f"SELECT COUNT(*) FROM trials WHERE run_id='{run_id}' AND phase='measured' AND ok=1")
        assert measured[0][0] >= 8  # 2 configurations x 4 rounds
    fleet.assert_clean()
    local = fleet.local_workdir
    assert ledger_entries(local) == [] and mounts_under(local) == [] and loops_under(local) == []
    assert [c for c in cmdlines() if str(local) in c] == [], "the local host's pickfs still running"
    (fleet.root / "figures.json").write_text(json.dumps({"fleet_wall_s": wall, "hosts": hosts}))

    # merged twice adds nothing: the fetched files again, by hand
    fetched = sorted((fleet.controller / "fleet" / fleets[0][0] / "hosts").glob("*/results.db"))
    assert len(fetched) >= 2
    again = fleet.pickfs("merge", *map(str, fetched))
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("nothing new") == len(fetched)

    # machines compared: per configuration each host's score, the ranking, and the storage difference named
    rep = fleet.pickfs("report", fleets[0][0], "--html", str(fleet.root / "fleet.html"))
    assert rep.returncode == 0, rep.stderr
    out = rep.stdout
    assert "ext4-nobarrier" in out and " a " in out and " b " in out
    assert "ranking" in out
    assert "mount.fstype" in out and "ext4" in out and "ext3" in out
    assert out.index("mount.fstype: ext4 -> ext3") < out.index("storage differences, a -> b") + 200  # storage first
    assert "c" in out and "symbolic link" in out  # the failed host, listed with its error
    page = (fleet.root / "fleet.html").read_text()
    assert "heatmap" in page and "mount.fstype" in page


def test_ctrl_c_on_the_controller_leaves_nothing_on_either_host(fleet):
    inventory = fleet.inventory(name="ctrl-c.ini")
    slow = fleet.root / "slow.toml"
    slow.write_text(PLAN.replace("rounds = 4", "rounds = 400"))
    proc = subprocess.Popen([sys.executable, "-m", "pickfs", "fleet", "run", "-i", str(inventory), "--plan", str(slow),
                             "--poll", "1s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=fleet.env())
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # until both hosts measure: their filesystems stand
            if all(h.mounts() and h.pickfs_processes() for h in fleet.hosts):
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(1)
        else:
            proc.send_signal(signal.SIGINT)
            raise AssertionError(f"the plan did not start on both hosts: {proc.communicate(timeout=240)[1]}")
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "--resume" in err
    fleet.assert_clean()
    db = fleet.controller / "results.db"
    rows = results(db, "SELECT status, hosts_json FROM fleets ORDER BY created DESC LIMIT 1")
    assert rows[0][0] == "interrupted"
    hosts = {h["name"]: h for h in json.loads(rows[0][1])}
    # what was measured before Ctrl-C is kept: each host's run merged, marked interrupted on the host
    for name in ("a", "b"):
        run_id = hosts[name]["run_id"]
        assert run_id, hosts
        assert results(db, f"SELECT status FROM runs WHERE id='{run_id}'")[0][0] == "interrupted"


def measured_on(h: Host, earlier: set[Path]) -> int:
    """Measured trials saved so far in the host's own results of a fleet job (not of the `earlier` ones)."""
    import sqlite3

    total = 0
    for db in set((h.workdir / "fleet").glob("fleet-*/results.db")) - earlier:
        try:
            conn = sqlite3.connect(db, timeout=30)
            try:
                total += conn.execute("SELECT COUNT(*) FROM trials WHERE phase='measured' AND ok=1").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error:
            pass
    return total


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def test_a_killed_controller_leaves_the_jobs_running_then_cleanup_and_resume_finish_them(fleet):
    inventory = fleet.inventory(name="killed.ini")
    plan = fleet.root / "twelve.toml"
    plan.write_text(PLAN.replace("rounds = 4", "rounds = 12"))
    earlier = {db for h in fleet.hosts for db in (h.workdir / "fleet").glob("fleet-*/results.db")}
    proc = subprocess.Popen([sys.executable, "-m", "pickfs", "fleet", "run", "-i", str(inventory), "--plan", str(plan),
                             "--poll", "1s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=fleet.env())
    try:
        deadline = time.monotonic() + 240
        while not all(h.mounts() and h.pickfs_processes() and measured_on(h, earlier) for h in fleet.hosts):
            assert proc.poll() is None and time.monotonic() < deadline, "the plan did not start on both hosts"
            time.sleep(1)
    finally:  # the controller machine dies: pickfs, its ansible-playbook and Ansible's workers (own sessions) at once
        tree, todo = [], [proc.pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo += children(pid)
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.communicate()
    killed = time.time()
    time.sleep(3)
    assert all(h.pickfs_processes() for h in fleet.hosts)  # async jobs: the runs outlive the connection
    clean = fleet.pickfs("fleet", "cleanup", "-i", str(inventory))
    assert clean.returncode == 0, clean.stderr
    assert "[a] stop the plan: done" in clean.stderr and "[b] stop the plan: done" in clean.stderr
    fleet.assert_clean()
    db = fleet.controller / "results.db"
    fleet_id = results(db, "SELECT id FROM fleets ORDER BY created DESC LIMIT 1")[0][0]
    resuming = time.time()
    resumed = fleet.pickfs("fleet", "run", "-i", str(inventory), "--resume", fleet_id, "--poll", "1s")
    assert resumed.returncode == 0, resumed.stderr
    row = results(db, f"SELECT hosts_json FROM fleets WHERE id='{fleet_id}'")[0]
    hosts = {h["name"]: h for h in json.loads(row[0])}
    for name in ("a", "b"):
        assert hosts[name]["status"] == "complete"
        run_id = hosts[name]["run_id"]
        status, = results(db, f"SELECT status FROM runs WHERE id='{run_id}'")[0]
        started = [t for (t,) in results(db, f"SELECT started FROM trials WHERE run_id='{run_id}' AND "
                                              "phase='measured' AND ok=1")]
        assert status == "complete"
        assert min(started) < killed and max(started) > resuming  # measured before the kill, kept; resumed after
    fleet.assert_clean()


def test_kill_9_of_a_hosts_job_then_cleanup_there_leaves_nothing_and_keeps_its_slices(fleet):
    """The kill -9 matrix's fleet case: a host's job (the plan running there) killed mid-measurement; the
    controller reports the host failed; `pickfs cleanup` on the host leaves nothing and keeps every slice."""
    inventory = fleet.inventory(name="job-killed.ini")
    plan = fleet.root / "long.toml"
    plan.write_text(PLAN.replace("rounds = 4", "rounds = 400"))
    earlier = {db for h in fleet.hosts for db in (h.workdir / "fleet").glob("fleet-*/results.db")}
    proc = subprocess.Popen([sys.executable, "-m", "pickfs", "fleet", "run", "-i", str(inventory), "--plan", str(plan),
                             "--poll", "1s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=fleet.env())
    try:
        deadline = time.monotonic() + 240
        while not all(h.mounts() and measured_on(h, earlier) for h in fleet.hosts):
            assert proc.poll() is None and time.monotonic() < deadline, "the plan did not start on both hosts"
            time.sleep(1)
        kept = {}
        for h in fleet.hosts:
            [db] = [d for d in (h.workdir / "fleet").glob("fleet-*/results.db") if d not in earlier]
            kept[h.name] = (db, set(results(db, "SELECT id FROM trials WHERE phase='measured' AND ok=1")))
            jobs = [p for p in h.processes() if b"pickfs.fleet.hostside execute" in
                    Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ")]
            assert jobs, h.pickfs_processes()
            for pid in jobs:
                os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=300)
    assert proc.returncode != 0 and "Traceback" not in err, err
    for h in fleet.hosts:
        assert h.mounts(), "a kill -9 leaves the filesystems mounted"
        clean = h.in_host(sys.executable, "-m", "pickfs", "cleanup", "--workdir", str(h.workdir),
                          "--results", str(kept[h.name][0]))
        assert clean.returncode == 0, clean.stderr
        assert "marked interrupted" in clean.stderr, clean.stderr
        db, before = kept[h.name]
        assert before <= set(results(db, "SELECT id FROM trials WHERE phase='measured' AND ok=1"))
        assert results(db, "SELECT status FROM runs") == [("interrupted",)]
    fleet.assert_clean()
