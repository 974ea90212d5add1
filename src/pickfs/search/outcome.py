"""A search's result as plain data (pure): what the reports render (report/search_text.py) and the JSON holds.

The answer is given as a ready-to-use setup: the mkfs command, the fstab line, a udev rule for the
scheduler and the database's settings, for the user's own device (DEVICE) and data directory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pickfs.analysis.setup import setup_of
from pickfs.model import DEFAULT_MARGIN, FsConfig, WorkloadSpec
from pickfs.search.driver import Advantage, SearchResult
from pickfs.search.space import unsafe_left_out


def setup(config: FsConfig, spec: WorkloadSpec, database: str | None) -> dict[str, Any]:
    """The answer as commands and lines to paste (pure): analysis/setup.py, as every run's report gives it."""
    return setup_of(config, spec, database).as_dict()


def _adv(a: Advantage | None) -> dict[str, Any] | None:
    return None if a is None else {"leader": a.leader, "over": a.over, "ratio": a.ratio, "low": a.low, "high": a.high,
                                   "same": a.same}


def to_dict(search_id: str, result: SearchResult, spec: WorkloadSpec, database: str | None,
            request: Mapping[str, Any], not_raced: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """`not_raced`: the presets the final race left out, and why (pickfs.search.presets)."""
    space = result.space
    margin = float(request.get("margin", DEFAULT_MARGIN))
    configs = {c.name: c for s in result.stages for c in s.spec.configs}
    answer = configs.get(result.answer or "")
    stages = []
    for s in result.stages:
        d = s.decision
        stages.append({
            "name": s.spec.name, "run_id": s.run_id, "configurations": [c.name for c in s.spec.configs],
            "budget_s": s.spec.budget_s, "elapsed_s": s.elapsed_s, "images": s.images, "cut": s.spec.cut,
            "image_s": s.image_s,
            "same_as": [{"preset": p, "raced_as": c} for p, c in s.spec.same_as],
            "answer": d.answer if d else None, "settled": bool(d and d.settled), "tied": list(d.tied) if d else [],
            "left": [{"name": n, "round": r + 1, "why": why} for n, r, why in s.left],
            "out": [{"name": n, "why": why} for n, why in (d.out if d else ())],
        })
    return {
        "search": search_id,
        "workload": {"name": spec.name, "label": spec.label, "settings": dict(spec.settings)},
        "request": dict(request),
        "margin": margin,
        "space": {"filesystems": [f.fstype for f in space.filesystems], "size": space.size(),
                  "allowed": sum(1 for c in space.candidates() if space.allowed(c)),
                  "pruned": list(space.pruned), "unsafe_left_out": [] if space.unsafe else unsafe_left_out(space),
                  "dimensions": {f.fstype: [{"name": d.name, "values": [v.label or "(default)" for v in d.values]}
                                            for d in f.dimensions] for f in space.filesystems}},
        "configurations_built": result.configurations,
        "images_built": result.built,
        "stages": stages,
        "skipped": list(result.skipped),
        "effects": [{"filesystem": e.fstype, "dimension": e.dimension, "value": e.value, "ratio": e.ratio,
                     "low": e.low, "high": e.high, "measurable": e.measurable, "within_margin": e.within(margin)}
                    for e in result.effects],
        "answer": None if answer is None else {
            "name": answer.name, "settled": result.settled, "tied": list(result.tied),
            "description": answer.description, "advantage": _adv(result.advantage),
            "best_preset": _adv(result.best_preset),
            "presets_not_raced": [{"name": n, "why": why} for n, why in not_raced], "setup": setup(answer, spec, database)},
    }
