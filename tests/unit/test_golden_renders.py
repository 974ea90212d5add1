"""Golden renders: every stored real run in tests/data/real-runs.db.gz drawn in every format, compared byte for
byte with the files under tests/data/golden/. They are the contract of every refactor of the analysis and the
report: a change that moves a byte of any render fails here until the goldens are written again on purpose.

To write them again (then read the diff, and commit the goldens on their own, saying what changed and why):

    PICKFS_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/test_golden_renders.py

What is normalised before comparing, so the renders do not depend on the machine or the moment:
- the time zone is fixed to UTC (the dates a report prints are the run's own, in local time);
- plotly's random element ids (a uuid4 per chart) become `uuid-1`, `uuid-2`, ... in order of appearance;
- the HTML pages load plotly.js from the file beside them (never inline), and the site's copy of plotly.js is
  compared by its name only (it is the library's bundle, not pickfs's output);
- the site's page of a run is its HTML page with a link to the index added: compared with that golden page.
"""

from __future__ import annotations

import gzip
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console

from pickfs.model import RunRecord
from pickfs.report.csv_export import render_csv, render_table_csv
from pickfs.report.html import PLOTLY_FILE, render_html
from pickfs.report.json_export import render_json
from pickfs.report.markdown import render_markdown
from pickfs.report.site import build_site, run_file
from pickfs.report.terminal import render_run, terse_lines
from pickfs.store import ResultStore

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden"
UPDATE = os.environ.get("PICKFS_UPDATE_GOLDEN") == "1"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module", autouse=True)
def utc() -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[RunRecord]:
    path = tmp_path_factory.mktemp("golden") / "results.db"
    path.write_bytes(gzip.decompress((DATA / "real-runs.db.gz").read_bytes()))
    store = ResultStore(path)
    out = [store.load(r.id) for r in store.list_runs()]
    store.close()
    return out


def normalised(text: str) -> str:
    """Plotly's random element ids numbered in order of appearance (the same id keeps its number)."""
    seen: dict[str, str] = {}
    return UUID.sub(lambda m: seen.setdefault(m.group(0), f"uuid-{len(seen) + 1}"), text)


def terminal(record: RunRecord, width: int, explain: bool = False) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, file=sink, color_system=None, force_terminal=False)
        console.print(render_run(record, explain=explain))
        return console.export_text()


FORMATS: dict[str, Callable[[RunRecord], str]] = {
    "terminal-80.txt": lambda r: terminal(r, 80),
    "terminal-120.txt": lambda r: terminal(r, 120),
    "explain-120.txt": lambda r: terminal(r, 120, explain=True),
    "quiet.txt": lambda r: "\n".join(terse_lines(r)) + "\n",
    "report.md": render_markdown,
    "trials.csv": render_csv,
    "table.csv": render_table_csv,
    "run.json": render_json,
    "run.html": lambda r: render_html(r, plotly=PLOTLY_FILE),
}


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    text = normalised(text)
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
        return
    assert path.exists(), f"no golden {path}: write it with PICKFS_UPDATE_GOLDEN=1"
    want = path.read_bytes().decode()
    assert text == want, f"{name} differs from its golden (PICKFS_UPDATE_GOLDEN=1 writes it again, on purpose)"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_run_in_every_format(records: list[RunRecord], fmt: str) -> None:
    assert len(records) >= 5
    for record in records:
        check(f"{record.id}/{fmt}", FORMATS[fmt](record))


def test_the_site_of_all_runs(records: list[RunRecord]) -> None:
    files = build_site(records)
    assert files.pop(PLOTLY_FILE)  # the library's bundle: by its name only
    for record in records:
        page = files.pop(run_file(record))
        golden = normalised(render_html(record, plotly=PLOTLY_FILE))
        assert normalised(page) == golden.replace("<h1>", "<p><a href=index.html>all runs</a></p><h1>", 1)
    assert any(name.startswith("plan-") for name in files)  # the tree plan was run twice
    for name, text in sorted(files.items()):
        check(f"site/{name}", text)
    if not UPDATE:
        kept = {p.name for p in (GOLDEN / "site").iterdir()}
        assert kept == set(files), "a golden page of the site is no longer made, or a new one is not kept"
