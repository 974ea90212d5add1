"""Latency histograms kept in raw output: microseconds to three significant digits (stdlib only)."""

from __future__ import annotations


def bucket_us(us: int) -> int:
    """A latency in microseconds, rounded to three significant digits (a histogram key)."""
    if us < 1000:
        return us
    digits = len(str(us)) - 3
    return round(us, -digits)


def add(histogram: dict[int, int], us: int) -> None:
    key = bucket_us(us)
    histogram[key] = histogram.get(key, 0) + 1


def merged(parts: list[dict[int, int]]) -> dict[int, int]:
    """Several counts by key (histograms, commits per second) added up."""
    out: dict[int, int] = {}
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0) + v
    return out
