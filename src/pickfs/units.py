"""Parsing of sizes and durations given by users (pure)."""

from __future__ import annotations

import math
import re

from pickfs.errors import PlanError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$", re.IGNORECASE)

MAX_SIZE = 1024**5  # 1 PiB: larger than any disk pickfs will be given, small enough for every tool
MAX_DURATION = 30 * 24 * 3600.0  # 30 days


def parse_size(text: str | int) -> int:
    """'4G', '512M', '4GiB', 1048576 -> bytes (binary multiples), from 0 to 1 PiB."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise PlanError(f"invalid size {text!r}", "write it like 4G, 512M or 1048576")
    if isinstance(text, int):
        value = text
    elif isinstance(text, float):
        if not math.isfinite(text):
            raise PlanError(f"invalid size {text!r}", "write it like 4G, 512M or 1048576")
        value = int(text)
    else:
        m = _SIZE.match(text)
        if not m:
            raise PlanError(f"invalid size {text!r}", "write it like 4G, 512M or 1048576")
        number, unit = float(m.group(1)), m.group(2).lower()
        if not math.isfinite(number):
            raise PlanError(f"invalid size {text!r}", "write it like 4G, 512M or 1048576")
        factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[unit]
        value = int(number * factor)
    if not 0 <= value <= MAX_SIZE:
        raise PlanError(f"size {text!r} is out of range", "give a size from 0 to 1P, written like 4G, 512M or 1048576")
    return value


def parse_duration(text: str | int | float) -> float:
    """'20s', '2m', '500ms', 20 -> seconds, from 0 to 30 days."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise PlanError(f"invalid duration {text!r}", "write it like 20s, 2m or 500ms")
    if isinstance(text, (int, float)):
        value = float(text) if not isinstance(text, int) or abs(text) <= 2**53 else math.inf
    else:
        m = _DURATION.match(text)
        if not m:
            raise PlanError(f"invalid duration {text!r}", "write it like 20s, 2m or 500ms")
        number, unit = float(m.group(1)), (m.group(2) or "s").lower()
        value = number * {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600}[unit]
    if not 0 <= value <= MAX_DURATION:  # also NaN and infinity
        raise PlanError(f"duration {text!r} is out of range", "give a duration from 0 to 30 days, like 20s, 2m or 500ms")
    return value


def has_control(text: str) -> bool:
    """Does the text hold a control character (newline, NUL, escape ...)?"""
    return any(ord(c) < 32 or ord(c) == 127 for c in text)

