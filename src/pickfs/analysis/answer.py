"""A workload's answer (pure): the configuration its judge names, whichever way it was measured."""

from __future__ import annotations

from pickfs.analysis.views import WorkloadView


def recommended(view: WorkloadView) -> str | None:
    """The name of the configuration the recommendation names, if any (none from a race that could not
    decide)."""
    if view.latency is not None:  # at a fixed rate: by latency (analysis/latency.py)
        return view.latency.answer if view.latency.settled else None
    if view.race is not None:
        d = view.race.decision
        return d.answer if d.settled else None
    return view.choice.chosen.cell.config.name if view.choice else None
