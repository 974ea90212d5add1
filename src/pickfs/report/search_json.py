"""A search's result as JSON (pure): the plain data of pickfs.search.outcome, versioned."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SCHEMA = 1


def render_json(d: Mapping[str, Any]) -> str:
    return json.dumps({"schema": SCHEMA, **d}, indent=2) + "\n"
