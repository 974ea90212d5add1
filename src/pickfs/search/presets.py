"""The presets a search's final race measures beside its leaders, and why the others are not raced."""

from __future__ import annotations

from pickfs.model import FsConfig
from pickfs.risks import config_risks
from pickfs.stack.filesystems import unavailable_reason
from pickfs.stack.presets import PRESETS


def safe_presets() -> tuple[FsConfig, ...]:
    """The presets that lose nothing on a power cut, on filesystems this machine builds (the final race's yardsticks)."""
    return tuple(p for p in PRESETS.values() if not config_risks(p) and unavailable_reason(p.fstype) is None)


def presets_not_raced() -> tuple[tuple[str, str], ...]:
    """Every other preset and why the final race leaves it out: what it risks, or what this machine lacks."""
    out = []
    for p in PRESETS.values():
        risks = config_risks(p)
        lacks = unavailable_reason(p.fstype)
        if risks:
            out.append((p.name, f"{risks[0]} (pickfs run --fs {p.name} measures it)"))
        elif lacks is not None:
            out.append((p.name, f"this machine cannot build it: {lacks}"))
    return tuple(out)
