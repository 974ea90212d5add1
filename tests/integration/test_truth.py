"""The whole truth on real runs: a cell's own writers only, flushes for a command, the R1 suite on
two filesystems, the barrier in env diff, and estimates that hold."""

import json
import re
import subprocess
import time
from pathlib import Path

from pickfs.fingerprint import fingerprint
from pickfs.model import FsConfig, Target
from pickfs.stack.ledger import Ledger
from pickfs.stack.provision import provision
from tests.conftest import needs_root, pickfs

pytestmark = needs_root


def cells(path: Path) -> dict[str, dict]:
    return {c["config"]: c for c in json.loads(path.read_text())["cells"]}


def test_an_unrelated_writer_on_another_loop_device_is_not_the_cells(workdir):
    """dd writing with O_DSYNC to a filesystem of its own, next to the run: other activity, never the cell's."""
    target = Target(workdir=str(workdir / "other"), size_bytes=512 * 1024**2)
    (workdir / "other").mkdir()
    ledger = Ledger(workdir / "other" / "ledger")
    out = workdir / "run.json"
    with provision(FsConfig("other", "ext4"), target, ledger) as prov:
        writer = subprocess.Popen(["dd", "if=/dev/zero", f"of={prov.datadir}/noise", "bs=64k", "count=1000000",
                                   "oflag=dsync"], stderr=subprocess.DEVNULL)
        try:
            r = pickfs(workdir, "run", "--fs", "ext4", "--set", "journal_mode=DELETE", "--blocks", "1", "--runs", "2",
                       "--warmup", "0", "--size", "1G", "--json", str(out))
        finally:
            writer.kill()
            writer.wait()
    assert r.returncode == 0, r.stderr
    cell = cells(out)["ext4"]
    lines = cell["explanation"]
    writers = next(line for line in lines if line.startswith("wrote the most"))
    assert "dd" not in re.split(r"[ ,:]+", writers), writers
    assert "workload client" in writers
    other = [line for line in lines if line.startswith("other activity on this machine")]
    assert other and "dd " in other[0], lines
    assert cell["monitors"]["other_write_bytes"] > 1024**2
    # the other filesystem's journal thread is not this cell's either
    assert not any(line.startswith("waiting on I/O") and prov.disk in line for line in lines)


def test_r1_suite_through_command_on_two_filesystems_names_flushes_and_the_journal(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4,ext4-nobarrier", "--workload", "command", "--set", "server=mariadb",
               "--set", "command='$PICKFS_PYTHON -m pickfs.suites.r1'", "--set", 'env={PICKFS_SUITE_ROUNDS="1"}',
               "--runs", "1", "--warmup", "0", "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    both = cells(out)
    for cell in both.values():
        assert cell["values"] and cell["values"][0] > 0, cell
        text = "\n".join(cell["explanation"])
        assert re.search(r"wrote [\d.,]+ MiB in [\d,]+ writes and [\d,]+ flushes: [\d.,]+ flushes per second", text), text
        assert "jbd2 (ext4 journal) wrote" in text and "of what reached the device" in text, text
        assert "mariadbd" in next(line for line in cell["explanation"] if line.startswith("wrote the most"))
    flushes = {n: c["monitors"]["disk_flushes"] for n, c in both.items()}
    assert flushes["ext4"] > 100 and flushes["ext4-nobarrier"] == 0, flushes
    assert " and 0 flushes: 0.0 flushes per second" in both["ext4-nobarrier"]["explanation"][0]


def test_r1_suite_runs_against_postgresql(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4", "--workload", "command", "--set", "server=postgresql",
               "--set", "command='$PICKFS_PYTHON -m pickfs.suites.r1'", "--set", 'env={PICKFS_SUITE_ROUNDS="1"}',
               "--runs", "1", "--warmup", "0", "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cell = cells(out)["ext4"]
    assert cell["values"][0] > 0 and cell["monitors"]["disk_flushes"] > 100
    assert "postgres" in next(line for line in cell["explanation"] if line.startswith("wrote the most"))


def test_env_diff_names_the_barrier_of_ext4_with_and_without_barrier_0(workdir):
    target = Target(workdir=str(workdir), size_bytes=256 * 1024**2)
    ledger = Ledger(workdir / "ledger")
    fps = {}
    for name, opts in (("with", ()), ("without", ("barrier=0",))):
        with provision(FsConfig(name, "ext4", mount_options=opts), target, ledger) as prov:
            fps[name] = fingerprint(str(prov.datadir))
            assert "barrier" in prov.info.effective_options or "nobarrier" in prov.info.effective_options
        (workdir / f"{name}.json").write_text(json.dumps(fps[name]))
    assert (fps["with"]["mount.effective.barrier"], fps["without"]["mount.effective.barrier"]) == ("on", "off")
    r = pickfs(workdir, "env", "diff", str(workdir / "with.json"), str(workdir / "without.json"))
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if "mount." in line]
    assert "mount.effective.barrier" in rows[0] and "on" in rows[0] and "off" in rows[0], r.stdout


def test_the_estimate_of_a_finished_run_is_within_1_5x_of_its_wall_time(workdir):
    """The first run teaches pickfs what a slot takes here; the second's estimate must hold."""
    plan = workdir / "plan.toml"
    plan.write_text('baseline = "ext4"\n[target]\nsize = "512M"\n[method]\nruns = 2\nwarmup = 0\n'
                    '[[config]]\npreset = "ext4"\n[[config]]\npreset = "ext2"\n'
                    '[[workload]]\nname = "command"\ncommand = "sleep 3"\n')
    assert pickfs(workdir, "run", "--plan", str(plan)).returncode == 0
    dry = pickfs(workdir, "plan", "check", str(plan))
    assert dry.returncode == 0, dry.stderr
    assert "2 of 2 configurations timed from a stored run" in dry.stdout, dry.stdout
    m = re.search(r"time: about ([\d.]+) (s|min)", dry.stdout)
    estimate = float(m.group(1)) * (60 if m.group(2) == "min" else 1)
    t0 = time.monotonic()
    r = pickfs(workdir, "run", "--plan", str(plan))
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert estimate / 1.5 <= wall <= estimate * 1.5, (estimate, wall)
