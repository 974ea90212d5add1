"""The registry of report formats (pure): every way a stored run is drawn, each a `Format` of report/sections.py that
draws every kind of section. Those with a file suffix are the exports `pickfs report` and `pickfs run` write
(--NAME FILE, in this order, then the trials CSV: cli/report.py). The site (report/site.py) draws its pages with HTML and its index with QUIET; the
trials CSV (csv_export.render_csv) is the raw figures, one row per trial, not a report of sections.

Loading this registry loads no plotly: the HTML format loads it only where a chart is drawn."""

from __future__ import annotations

from typing import Any

from pickfs.report.csv_export import TABLE_CSV
from pickfs.report.html import HTML
from pickfs.report.json_export import JSON
from pickfs.report.markdown import MARKDOWN
from pickfs.report.sections import Format
from pickfs.report.terminal import EXPLAIN, QUIET, TERMINAL

FORMATS: tuple[Format[Any, Any], ...] = (TERMINAL, EXPLAIN, QUIET, JSON, MARKDOWN, TABLE_CSV, HTML)
