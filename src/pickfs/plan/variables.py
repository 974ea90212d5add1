"""The one-variable-at-a-time check: in which settings a configuration differs from its base (pure)."""

from __future__ import annotations

from pickfs.model import FsConfig
from pickfs.stack.presets import PRESETS


def _mkfs_groups(opts: tuple[str, ...]) -> dict[str, str]:
    """mkfs arguments grouped by flag: {'-b': '4096', '-O': '^has_journal', 'positional': 'positional'}."""
    groups: dict[str, str] = {}
    key = None
    for tok in opts:
        if tok.startswith("-"):
            key = tok
            groups[key] = ""
        elif key is not None:
            groups[key] = (groups[key] + " " + tok).strip()
            key = None
        else:
            groups[tok] = tok
    return groups


def setting_differences(a: FsConfig, b: FsConfig) -> list[str]:
    """Settings in which two configurations differ (fstype, each mkfs flag, each mount option, scheduler)."""
    diffs = []
    if a.fstype != b.fstype:
        diffs.append(f"filesystem {b.fstype} -> {a.fstype}")
    ga, gb = _mkfs_groups(a.mkfs_options), _mkfs_groups(b.mkfs_options)
    for k in sorted(set(ga) | set(gb)):
        if ga.get(k) != gb.get(k):
            diffs.append(f"mkfs {k} {gb.get(k, '(unset)')} -> {ga.get(k, '(unset)')}")
    ma = {o.split("=", 1)[0]: o for o in a.mount_options}
    mb = {o.split("=", 1)[0]: o for o in b.mount_options}
    for k in sorted(set(ma) | set(mb)):
        if ma.get(k) != mb.get(k):
            diffs.append(f"mount {mb.get(k, '(unset)')} -> {ma.get(k, '(unset)')}")
    if a.scheduler != b.scheduler:
        diffs.append(f"scheduler {b.scheduler or '(default)'} -> {a.scheduler or '(default)'}")
    if (a.age, a.age_rounds, a.age_seed) != (b.age, b.age_rounds, b.age_seed):
        diffs.append(f"aged {_aged(b)} -> {_aged(a)}")
    return diffs


def _aged(c: FsConfig) -> str:
    return f"{c.age:.0%} ({c.age_rounds} rounds, seed {c.age_seed})" if c.age else "fresh"


def one_variable_warnings(configs: tuple[FsConfig, ...]) -> list[str]:
    """A warning for each configuration that differs from its base in more than one setting."""
    by_name = {c.name: c for c in configs}
    warnings = []
    for c in configs:
        if not c.base:
            continue
        base = by_name.get(c.base) or PRESETS.get(c.base)
        if base is None:
            warnings.append(f"{c.name}: base {c.base!r} is not in this plan nor a preset; nothing to compare")
            continue
        diffs = setting_differences(c, base)
        if len(diffs) > 1:
            warnings.append(f"{c.name} differs from its base {base.name} in {len(diffs)} settings "
                            f"({'; '.join(diffs)}): a difference in results cannot be pinned on one of them")
    return warnings
