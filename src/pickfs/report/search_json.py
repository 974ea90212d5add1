"""A search's result as JSON (pure): the plain data of pickfs.search.outcome, versioned."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pickfs.report.json_text import strict_json

SCHEMA = 1


def render_json(d: Mapping[str, Any]) -> str:
    return strict_json({"schema": SCHEMA, **d})
