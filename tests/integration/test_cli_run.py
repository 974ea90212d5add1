import json
from pathlib import Path

import pytest

from pickfs.engine.race import baseline_copies
from pickfs.stack.filesystems import unavailable_reason
from pickfs.stack.presets import PRESETS
from tests.conftest import ledger_entries, needs_root, pickfs

AVAILABLE = [n for n, p in PRESETS.items() if unavailable_reason(p.fstype) is None]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@needs_root
def test_every_preset_short_run_with_json(workdir):
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "all,jfs", "--blocks", "1", "--runs", "2", "--warmup", "0", "--duration", "1s",
               "--size", "1G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    cells = {c["config"]: c for c in doc["cells"]}
    copies = baseline_copies(len([n for n in AVAILABLE if n in cells]) - 1)
    assert copies > 1  # the baseline stands in several images of the one block
    for name in AVAILABLE:
        assert cells[name]["status"] == "ok", cells[name]["notes"]
        assert len(cells[name]["values"]) == 2 * (copies if name == "ext4" else 1) and min(cells[name]["values"]) > 0
        assert cells[name]["unit"] == "tx/s"
        assert cells[name]["metrics"]["lat_p99"]["summary"]["median"] > 0
    # jfs: this kernel has none; the rest of the matrix ran and the fix is named
    if unavailable_reason("jfs"):
        assert cells["jfs"]["status"] == "unavailable"
        assert "jfs" in cells["jfs"]["notes"][0]
    # the in-memory upper bound beats a journaled disk filesystem with fsync on every commit
    assert cells["tmpfs"]["summary"]["median"] > cells["ext4"]["summary"]["median"]
    assert cells["ext4"]["relative_to_baseline"] == pytest.approx(100)
    assert any(r.startswith("nobarrier") for r in cells["ext4-nobarrier"]["risks"])
    assert cells["ext4"]["risks"] == []
    assert "ext4-nobarrier" in r.stdout and "vs ext4" in r.stdout
    assert ledger_entries(workdir) == []

    listing = pickfs(workdir, "results")
    assert doc["run_id"] in listing.stdout and "complete" in listing.stdout
    again = pickfs(workdir, "report", doc["run_id"][:15], "--json", "-")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["cells"] == doc["cells"]


@needs_root
def test_first_and_last_runs_agree_without_warmup(workdir):
    """Steady state: with no warm-up, the first measured run is not an outlier."""
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--fs", "ext4", "--blocks", "1", "--runs", "3", "--warmup", "0", "--duration", "2s",
               "--size", "4G", "--json", str(out))
    assert r.returncode == 0, r.stderr
    values = json.loads(out.read_text())["cells"][0]["values"]
    # This VM's disk switches between speeds: identical runs differed up to 1.7x here (ext3: 10,888
    # and 17,565 tx/s) and fdatasync speed moves up to 3x within a minute on the shared disk (2.5x was
    # seen between runs of a full test session). A filesystem still initialising in the background
    # (lazy inode tables, journal) makes the first run stand apart by far more; the exact checks are
    # the idle-device and dumpe2fs tests.
    assert max(values) / min(values) < 4, values


def test_directory_target_compares_existing_directories(workdir):
    a, b = workdir / "a", workdir / "b"
    a.mkdir()
    b.mkdir()
    out = workdir / "dir.json"
    r = pickfs(workdir, "run", "--dir", str(a), "--dir", str(b), "--blocks", "1", "--runs", "1", "--warmup", "0",
               "--duration", "1s", "--json", str(out))
    assert r.returncode == 0, r.stderr
    cells = json.loads(out.read_text())["cells"]
    assert [c["status"] for c in cells] == ["ok", "ok"]
    assert list(a.iterdir()) == [] and list(b.iterdir()) == []  # pickfs's data removed


@pytest.mark.parametrize("args,fragment", [
    (["run", "--fs", "ext5"], "unknown preset or filesystem 'ext5'"),
    (["run", "--plan", "/nonexistent.toml"], "not found"),
    (["run", "--fs", "ext4", "--set", "synchronus=OFF"], "no selected workload has the setting synchronus"),
    (["run", "--fs", "ext4", "--size", "huge"], "invalid size"),
    (["run", "--fs", "ext4", "--workload", "pgbnech"], "unknown workload"),
    (["run", "--fs", "ext4", "--baseline", "xfs"], "baseline 'xfs'"),
    (["report", "nope"], "no results database"),  # a read creates no results file to look in
    (["run", "--blocks", "1", "--runs", "many"], "many"),
    (["run", "--fs", "ext4", "--target-ci", "lots"], "--target-ci 'lots' is not a share"),
    (["run", "--plan", str(EXAMPLES / "r4-tuned-xfs.toml"), "--fs", "ext4"], "--fs cannot be combined with --plan"),
    (["run", "--fs", "ext4", "--target-ci", "2%", "--blocks", "1", "--runs", "9", "--max-runs", "4"], "max_runs 4 is below runs 9"),
    (["run", "--fs", "ext4", "--crash-states", "12", "--crash-bound", "150"], "--crash-bound needs a budget"),
])
def test_bad_input_is_one_line_without_traceback(workdir, args, fragment):
    r = pickfs(workdir, *args)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error:") and fragment in lines[0]


def test_non_root_is_told_what_to_do(workdir, monkeypatch, capsys):
    from pickfs.cli import common
    from pickfs.cli.main import main

    monkeypatch.setattr(common.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as exc:
        main(["run", "--fs", "ext4", "--workdir", str(workdir)])
    assert exc.value.code == 2  # a refusal, as every other
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "needs root" in err and "--dir PATH" in err
    assert not (workdir / "ledger").exists()
