"""JSON text any strict parser takes (pure): a number that is not finite (NaN, Infinity: the spread of a workload
that wrote 0 bytes, a ratio over zero) becomes null, and the encoder refuses anything else that is not JSON, so that
a regression fails loudly here rather than in the reader's parser."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """`value` with every float that is not finite replaced by None, through dicts, lists and tuples (pure)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def strict_json(value: Any, indent: int | None = 2, sort_keys: bool = False) -> str:
    """`value` as JSON text ending in a newline: NaN and Infinity as null, and never a token outside the
    standard (allow_nan=False raises ValueError on one that got through)."""
    return json.dumps(finite(value), indent=indent, sort_keys=sort_keys, allow_nan=False) + "\n"
