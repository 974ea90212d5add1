"""The words under a crash table (pure): the model in force, what no simulation can show, the settings
this model could not exercise, when each losing state was cut, and how fast states were explored."""

from __future__ import annotations

from typing import Any

from pickfs.analysis.views import WorkloadView

MAX_LOSING = 8  # losing states listed per configuration


def _state_line(s: dict[str, Any]) -> str:
    what = []
    if s.get("lost"):
        what.append(f"lost {s['lost']:,} of {s.get('acked_before', 0):,} acknowledged commits")
    if not s.get("mounted", True):
        what.append("would not mount")
    elif not s.get("db_opened", True):
        what.append("would not open")
    elif s.get("consistent") is False:
        what.append("inconsistent")
    how = [s.get("mode", "")]
    if s.get("torn"):
        how.append(f"{s['torn']} write{'s' if s['torn'] != 1 else ''} torn")
    if s.get("dropped"):
        how.append(f"{s['dropped']:,} of {s.get('units', 0):,} unflushed units lost")
    line = f"state {s.get('index', 0) + 1} ({', '.join(h for h in how if h)}): {'; '.join(what) or 'failed'}"
    if s.get("when"):
        line += f"; cut {s['when']}"
    if s.get("recovery"):
        line += f"; {s['recovery']}"
    if s.get("problem"):
        line += f" — {s['problem'][:160]}"
    if s.get("kept_as"):
        line += f" (image kept: {s['kept_as']})"
    return line


def _failed(s: dict[str, Any]) -> bool:
    return bool(s.get("lost")) or not s.get("mounted", True) or (s.get("mounted", True) and not s.get("db_opened", True)) \
        or s.get("consistent") is False


def crash_details(view: WorkloadView) -> list[str]:
    """Per crash-tested configuration: settings not exercised, speed, and when each losing state was cut."""
    out = []
    for r in view.rows:
        c = r.crash
        if c is None or c.error:
            continue
        name = r.cell.config.name
        for gap in c.gaps:
            out.append(f"{name}: ⚠ {gap}")
        out.extend(f"{name}: {note}" for note in c.notes)
        rate = c.metrics.get("crash_states_per_s")
        if rate:
            torn = int(c.metrics.get("crash_torn_states", 0))
            again = int(c.metrics.get("crash_recovery_states", 0))
            out.append(f"{name}: {c.tried} states checked at {rate:.2f} states/s ({1 / rate:.1f} s each); "
                       f"{torn} tore a write, {again} lost power again during recovery")
        losing = [s for s in c.states if _failed(s)]
        for s in losing[:MAX_LOSING]:
            out.append(f"{name}: {_state_line(s)}")
        if len(losing) > MAX_LOSING:
            out.append(f"{name}: ... and {len(losing) - MAX_LOSING} more losing states (in the JSON)")
    return out


def crash_statements(views: list[WorkloadView]) -> list[str]:
    """The model in force and what no simulation can show, once per report (each distinct one)."""
    out: list[str] = []
    for v in views:
        for r in v.rows:
            if r.crash and not r.crash.error:
                for text in (f"crash-test model: {r.crash.model}" if r.crash.model else "",
                             f"{r.crash.unseen}" if r.crash.unseen else ""):
                    if text and text not in out:
                        out.append(text)
    return out
