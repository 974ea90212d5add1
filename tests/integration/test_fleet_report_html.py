"""The machines-compared page in a real browser: offline, no console errors, both heat maps drawn."""

import re
import tempfile

from pickfs.report.fleet import build_fleet_view, render_fleet_html
from tests.integration.test_html_report import ARTIFACTS, browser, pytestmark  # noqa: F401 - the same skip rule
from tests.unit.test_merge import fleet_store


def test_fleet_page_draws_its_heat_maps_in_chromium(tmp_path):
    store = fleet_store(tmp_path, {0: [125, 126, 124], 1: [1990, 2000, 2010], 2: [60, 61, 62]})
    view = build_fleet_view(store.load_fleet("fleet-x"), {"a": store.load("r-a"), "b": store.load("r-b")})
    page = tmp_path / "fleet.html"
    page.write_text(render_fleet_html(view))
    assert not re.search(r"<(script|link)[^>]+(src|href)=", page.read_text())  # plotly.js inline: works offline
    with tempfile.TemporaryDirectory() as profile:
        r = browser("--dump-dom", page.as_uri(), profile=profile)
    dom = r.stdout
    charts = int(re.search(r'data-charts="(\d+)"', dom).group(1))
    drawn = int(re.search(r'data-charts-drawn="(\d+)"', dom).group(1))
    assert charts == 2 and drawn == charts, (charts, drawn)
    assert re.search(r'data-errors="([^"]*)"', dom).group(1) == ""
    assert "mount.fstype: ext3 -&gt; ext4" in dom and "ext4: b is x0.13" in dom
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "fleet-report.png"
    with tempfile.TemporaryDirectory() as profile:
        browser("--window-size=1280,2200", f"--screenshot={shot}", page.as_uri(), profile=profile)
    assert shot.exists() and shot.stat().st_size > 20_000
