"""Parsing of sizes and durations given by users (pure)."""

from __future__ import annotations

import re

from pickfs.errors import PlanError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """'4G', '512M', '4GiB', 1048576 -> bytes (binary multiples)."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise PlanError(f"invalid size {text!r}", "write it like 4G, 512M or 1048576")
    number, unit = float(m.group(1)), m.group(2).lower()
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[unit]
    return int(number * factor)


def parse_duration(text: str | int | float) -> float:
    """'20s', '2m', '500ms', 20 -> seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    m = _DURATION.match(str(text))
    if not m:
        raise PlanError(f"invalid duration {text!r}", "write it like 20s, 2m or 500ms")
    number, unit = float(m.group(1)), (m.group(2) or "s").lower()
    return number * {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600}[unit]
