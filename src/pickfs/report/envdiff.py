"""Differences between two storage fingerprints, those that change storage behaviour first (pure)."""

from __future__ import annotations

from dataclasses import dataclass

# Keys (by prefix or suffix) that change how writes reach the disk, most telling first.
_STORAGE_ORDER = (
    "mount.fstype", "mount.effective.barrier", "mount.option.nobarrier", "mount.option.barrier",
    "mount.effective.data", "mount.option.data", "mount.effective.sync", "mount.option.sync",
    "mount.effective.commit", "mount.effective.delalloc", "mount.effective.", "mount.option.", ".write_cache", ".kind",
    ".rotational", ".model", ".scheduler", ".nr_requests",
    "db.postgresql.", "db.mysql.", "db.firebird.", "db.sqlite.", "host.kernel", ".direct_io", ".backing_file",
)
_IGNORED = ("path", "mount.source", "mount.mountpoint", ".name", ".size_bytes", "note.")


@dataclass(frozen=True)
class Difference:
    key: str
    a: str | None
    b: str | None
    storage: bool  # does it change how writes reach the disk?


def _rank(key: str) -> int | None:
    for i, pattern in enumerate(_STORAGE_ORDER):
        if (pattern.endswith(".") and key.startswith(pattern)) or key == pattern or \
                (pattern.startswith(".") and key.endswith(pattern)):
            return i
    return None


def diff(a: dict[str, str], b: dict[str, str]) -> list[Difference]:
    keys = sorted(set(a) | set(b))
    out = []
    for k in keys:
        if any(k == x or (x.startswith(".") and k.endswith(x)) or (x.endswith(".") and k.startswith(x))
               for x in _IGNORED):
            continue
        if a.get(k) != b.get(k):
            out.append(Difference(k, a.get(k), b.get(k), _rank(k) is not None))
    return sorted(out, key=lambda d: (_rank(d.key) is None, _rank(d.key) or 0, d.key))
