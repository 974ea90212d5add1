"""The colours of every chart, each with one meaning: a verdict's or a safety level's colour is never also a
configuration's (pure data)."""

from __future__ import annotations

from collections.abc import Sequence

# What a colour says wherever it appears: faster, slower, no difference, the baseline, a setting that trades safety.
GOOD, BAD, SAME, BASE, UNSAFE, SAFE = "#2b8a3e", "#c92a2a", "#868e96", "#212529", "#e8590c", "#2b8a3e"
MEANINGS = frozenset({GOOD, BAD, SAME, BASE, UNSAFE, SAFE})
# A configuration's own colour, the same in every chart of a report: none of them is a verdict's.
PALETTE = ("#1c7ed6", "#ae3ec9", "#f08c00", "#0ca678", "#5c7cfa", "#15aabf", "#d6336c", "#7950f2", "#fab005",
           "#099268", "#a61e4d", "#364fc7")


def colour_of(name: str, names: Sequence[str]) -> str:
    """A configuration's colour: its place among every configuration of the report, never a chart's own order."""
    return PALETTE[(list(names).index(name) if name in names else len(names)) % len(PALETTE)]
