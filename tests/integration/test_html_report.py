"""The HTML report in a real browser: loads offline, no console errors, every chart drawn."""

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pickfs.model import Trial
from pickfs.report.html import render_html
from pickfs.store import ResultStore
from tests.records import fill, make_plan

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                                reason="needs Debian's chromium (./bootstrap.sh test installs it)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--virtual-time-budget=10000"]


def browser(*args, profile):
    assert CHROMIUM, "chromium is missing: apt-get install chromium"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", *args],
                          capture_output=True, text=True, timeout=120)


def record_with_everything(tmp_path):
    """A stored run whose trials carry latency metrics, per-second series and monitor series."""
    store = ResultStore(tmp_path / "r.db")
    run_id = fill(store, make_plan())
    rec = store.load(run_id)
    trials = []
    for t in rec.trials:
        if t.phase == "measured" and t.ok:
            raw = json.dumps({"per_second": [t.metrics["tps"]] * 3})
            mon = {"totals": {"elapsed_s": 3.0, "disk": "loop0", "disk_write_bytes": 1 << 20, "disk_writes": 100,
                              "disk_flushes": 50, "disk_busy_s": 1.5, "cpu_iowait_share": 0.2},
                   "series": {"t": [1, 2, 3], "disk_util": [0.5, 0.6, 0.4], "iowait": [0.1, 0.2, 0.1]},
                   "processes": [], "io_waiting": [{"comm": "jbd2/loop0-8", "share": 0.3}]}
            metrics = {**t.metrics, "lat_p50": 0.0002, "lat_p95": 0.0004, "lat_p99": 0.0009, "lat_max": 0.004,
                       "transactions": t.metrics["tps"] * 3}
            t = Trial(run_id=t.run_id, cell_index=t.cell_index, repetition=t.repetition, phase=t.phase,
                      started=t.started, elapsed_s=3.0, ok=True, metrics=metrics, raw_output=raw,
                      mount=t.mount, notes=t.notes, t.error, mon)
        trials.append(t)
    return type(rec)(**{**rec.__dict__, "trials": tuple(trials)})


def test_report_renders_in_chromium_without_errors(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(record_with_everything(tmp_path)))
    assert not re.search(r"<(script|link)[^>]+(src|href)=", page.read_text())  # nothing fetched: plotly.js is inline
    with tempfile.TemporaryDirectory() as profile:
        r = browser("--dump-dom", page.as_uri(), profile=profile)
    dom = r.stdout
    charts = int(re.search(r'data-charts="(\d+)"', dom).group(1))
    drawn = int(re.search(r'data-charts-drawn="(\d+)"', dom).group(1))
    errors = re.search(r'data-errors="([^"]*)"', dom).group(1)
    assert charts == 4 and drawn == charts, (charts, drawn)
    assert errors == ""
    console_errors = [line for line in r.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    assert console_errors == []
    assert "sqlite-tpcb: use ext4 (" in dom and "significantly faster than every other configuration" in dom

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    with tempfile.TemporaryDirectory() as profile:
        browser("--window-size=1280,3000", f"--screenshot={shot}", page.as_uri(), profile=profile)
    assert shot.exists() and shot.stat().st_size > 50_000
