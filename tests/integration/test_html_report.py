"""The HTML report in a real browser: loads offline, no console errors, every chart drawn, no two labels of the
ratio and safety charts overlapping, the answer in the first screenful; the static site too."""

import gzip
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pickfs.analysis.answer import recommended
from pickfs.analysis.run import build_views
from pickfs.model import Trial
from pickfs.report.html import render_html
from pickfs.report.site import build_site
from pickfs.store import ResultStore
from tests.records import fill, make_plan

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
REAL_RUNS = Path(__file__).resolve().parents[1] / "data" / "real-runs.db.gz"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                                reason="needs Debian's chromium (./bootstrap.sh test installs it)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--virtual-time-budget=10000"]


def browser(*args, profile):
    assert CHROMIUM, "chromium is missing: apt-get install chromium"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", *args],
                          capture_output=True, text=True, timeout=120, check=False)


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
                      mount=t.mount, notes=t.notes, error=t.error, monitor=mon)
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
    assert charts == page.read_text().count('<div class="chart"') and charts >= 3 and drawn == charts, (charts, drawn)
    assert errors == ""
    console_errors = [line for line in r.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    assert console_errors == []
    assert "sqlite-tpcb: use ext4 (" in dom and "significantly faster than every other configuration" in dom

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    with tempfile.TemporaryDirectory() as profile:
        browser("--window-size=1280,3000", f"--screenshot={shot}", page.as_uri(), profile=profile)
    assert shot.exists() and shot.stat().st_size > 50_000


def probe(dom: str) -> dict:
    """What the page's probe found once every chart had drawn."""
    def attr(name):
        m = re.search(rf'{name}="([^"]*)"', dom)
        assert m, f"{name} missing: the page's probe did not run"
        return html.unescape(m.group(1))
    return {"charts": int(attr("data-charts")), "drawn": int(attr("data-charts-drawn")), "errors": attr("data-errors"),
            "overlaps": json.loads(attr("data-overlaps")), "rec_bottom": int(attr("data-rec-bottom")),
            "height": int(attr("data-window-height")), "facts": json.loads(attr("data-chart-facts"))}


def tick_value(label: str) -> float:
    """A tick label as drawn ('×1.5', '2k', '500', '0.5') as a number."""
    text = label.replace("×", "").replace("\u2212", "-").replace(",", "")
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1:], 1)
    return float(text[:-1] if scale != 1 else text) * scale


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    path = tmp_path_factory.mktemp("real") / "results.db"
    path.write_bytes(gzip.decompress(REAL_RUNS.read_bytes()))
    store = ResultStore(path)
    yield [store.load(r.id) for r in store.list_runs()]
    store.close()


def test_real_run_reads_at_a_glance_in_chromium(real_runs, tmp_path):
    """A stored real run (five configurations, two SQLite settings, a crash test): every chart draws, no label of
    the ratio or safety charts overlaps another, the recommendation is in the first screenful."""
    record = next(r for r in real_runs if any(w["label"] == "sqlite-full" for w in r.plan["workloads"]))
    page = tmp_path / "real.html"
    text = render_html(record)
    page.write_text(text)
    with tempfile.TemporaryDirectory() as profile:
        r = browser("--window-size=1280,900", "--dump-dom", page.as_uri(), profile=profile)
    found = probe(r.stdout)
    kinds = re.findall(r'data-chart="([a-z-]+)"', text)
    assert kinds[:2] == ["forest", "references"]  # the ratio chart first, the in-memory reference apart
    assert {"forest", "safety", "latency", "over-time", "crash"} <= set(kinds)
    assert found["charts"] == len(kinds) and found["drawn"] == found["charts"], found
    assert found["errors"] == ""
    assert [line for line in r.stderr.splitlines() if "CONSOLE" in line and "rror" in line] == []
    for kind in ("forest", "safety", "references"):
        assert found["overlaps"][kind] == [], (kind, found["overlaps"][kind])
    assert found["rec_bottom"] <= found["height"], found  # the answer without scrolling
    no_traps(found, ["tmpfs"])
    chosen = recommended(build_views(record)[0])
    assert f"use {chosen}" in r.stdout.split('class="rec"')[1][:2000]

    ARTIFACTS.mkdir(exist_ok=True)
    for name, size in (("report-real-top.png", "1280,900"), ("report-real.png", "1280,5200")):
        shot = ARTIFACTS / name
        with tempfile.TemporaryDirectory() as profile:
            browser(f"--window-size={size}", f"--screenshot={shot}", page.as_uri(), profile=profile)
        assert shot.exists() and shot.stat().st_size > 50_000


def test_site_pages_draw_offline_in_chromium(real_runs, tmp_path):
    """The static site: plotly.js is one local file beside the pages; a run page and a comparison page draw."""
    for name, body in build_site(real_runs).items():
        (tmp_path / name).write_text(body)
    pages = [tmp_path / "index.html", next(tmp_path.glob("plan-*.html")), next(tmp_path.glob("run-*.html"))]
    for p in pages:
        with tempfile.TemporaryDirectory() as profile:
            r = browser("--dump-dom", p.as_uri(), profile=profile)
        found = probe(r.stdout) if 'data-rec-bottom="' in r.stdout else None
        charts = int(re.search(r'data-charts="(\d+)"', r.stdout).group(1))
        drawn = int(re.search(r'data-charts-drawn="(\d+)"', r.stdout).group(1))
        assert charts == p.read_text().count('<div class="chart"') and drawn == charts, (p.name, charts, drawn)
        assert re.search(r'data-errors=""', r.stdout), p.name
        if found is not None:
            assert found["errors"] == ""
    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        browser("--window-size=1280,1400", f"--screenshot={ARTIFACTS / 'site-comparison.png'}", pages[1].as_uri(),
                profile=profile)


def test_the_default_job_keeps_its_twelve_labels_apart(real_runs, tmp_path):
    """The default job (every preset, tmpfs ten times the disks), as really run here: no two labels of the ratio,
    reference or safety charts overlap, nor the latency and over-time charts' ticks, and the answer is in the first
    screenful."""
    record = next(r for r in real_runs if len(r.plan["configs"]) == 12)
    page = tmp_path / "default.html"
    page.write_text(render_html(record))
    with tempfile.TemporaryDirectory() as profile:
        r = browser("--window-size=1280,900", "--dump-dom", page.as_uri(), profile=profile)
    found = probe(r.stdout)
    assert found["charts"] >= 4 and found["drawn"] == found["charts"] and found["errors"] == ""
    for kind in ("forest", "safety", "references", "latency", "over-time"):
        assert found["overlaps"].get(kind) == [], (kind, found["overlaps"].get(kind))
    assert found["rec_bottom"] <= found["height"], found
    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        browser("--window-size=1280,3600", f"--screenshot={ARTIFACTS / 'report-default-job.png'}", page.as_uri(),
                profile=profile)


NUMERIC = re.compile(r"×?\d[\d.,]*[kMG]?")


def no_traps(found: dict, references: list[str]) -> None:
    """Every value axis labelled in order, each label in full; no reference on a candidate's axis; legends inside
    their charts without a scroll bar; every error bar inside its plot."""
    for chart in found["facts"]:
        kind = chart["kind"]
        for axis in chart["axes"]:
            labels = axis["labels"]
            if labels and all(NUMERIC.fullmatch(x) for x in labels):  # a value axis: in order, each in full
                numbers = [tick_value(x) for x in labels]
                assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), (kind, labels)
            if kind in ("forest", "safety") and not axis["x"]:
                assert not any(x.split()[0] in references for x in labels), (kind, labels)  # references apart
        assert not chart["legend_overflow"], kind
        assert chart["bars_outside"] == 0, kind


def test_default_job_charts_have_no_traps(real_runs, tmp_path):
    """The default job's page with plotly.js beside it: under 1 MB; no reference (tmpfs, raw) on a candidate's axis;
    every log axis labelled in full and in order (never '2, 10k, 5, 2, 1000'); every interval inside its axis;
    legends inside their charts without a scroll bar; over time as one small panel per configuration."""
    from pickfs.report.html import PLOTLY_FILE
    from pickfs.report.site import build_site

    record = next(r for r in real_runs if len(r.plan["configs"]) == 12)
    text = render_html(record, plotly=PLOTLY_FILE)
    assert len(text.encode()) < 1_000_000, len(text.encode())
    assert text.count("<script src=") == 1  # plotly loaded once
    page = tmp_path / "default.html"
    page.write_text(text)
    (tmp_path / PLOTLY_FILE).write_text(build_site([])[PLOTLY_FILE])
    with tempfile.TemporaryDirectory() as profile:
        r = browser("--window-size=1280,900", "--dump-dom", page.as_uri(), profile=profile)
    found = probe(r.stdout)
    assert found["charts"] >= 4 and found["drawn"] == found["charts"] and found["errors"] == "", found
    references = [row.cell.config.name for row in build_views(record)[0].rows if row.cell.config.fstype == "tmpfs"]
    assert references
    no_traps(found, references)
    over_time = [c for c in found["facts"] if c["kind"] == "over-time"]
    assert over_time and len([a for a in over_time[0]["axes"] if a["x"]]) >= 2  # small multiples


def test_safety_legend_names_each_risk_by_its_own_category(real_runs, tmp_path):
    """ext4-writeback (stale blocks) and ext2 (a full fsck) are not drawn as losing acknowledged commits."""
    from pickfs.report.charts import SAFETY_LEVELS, safety_chart

    record = next(r for r in real_runs if len(r.plan["configs"]) == 12)
    fig = safety_chart(build_views(record)[0])
    groups = {t.name: {y.split()[0] for y in t.y} for t in fig.data if t.name != "recommended"}
    assert "ext4-nobarrier" in groups[SAFETY_LEVELS[1]]
    assert {"ext4-writeback", "ext2"} <= groups[SAFETY_LEVELS[2]]
    assert not {"ext4-writeback", "ext2"} & groups.get(SAFETY_LEVELS[1], set())
    page = tmp_path / "safety.html"
    page.write_text(render_html(record))
    with tempfile.TemporaryDirectory() as profile:
        r = browser("--window-size=1280,900", "--dump-dom", page.as_uri(), profile=profile)
    dom = html.unescape(r.stdout)
    assert SAFETY_LEVELS[2] in dom  # drawn in the legend


def test_pickfs_report_html_writes_plotly_once_beside_the_page(real_runs, tmp_path):
    import gzip as gz

    results = tmp_path / "results.db"
    results.write_bytes(gz.decompress(REAL_RUNS.read_bytes()))
    record = next(r for r in real_runs if len(r.plan["configs"]) == 12)
    out = tmp_path / "out" / "page.html"
    out.parent.mkdir()
    env = {**os.environ, "PICKFS_WORKDIR": str(tmp_path / "w")}
    r = subprocess.run([sys.executable, "-m", "pickfs", "report", record.id, "--html", str(out), "--results",
                        str(results)], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""  # the file is the output: no table printed as well
    assert out.stat().st_size < 1_000_000 and (out.parent / "plotly.min.js").stat().st_size > 1_000_000
    assert '<script src="plotly.min.js"></script>' in out.read_text()
