"""The words under a crash table (pure): what the sample of power cuts rules out, the model in force, what no
simulation can show, the settings this model could not exercise, when each losing state was cut, and how fast
states were explored."""

from __future__ import annotations

from typing import Any

from pickfs.analysis.crash_verdict import drawn_bound, loss_rate, ruled_out
from pickfs.analysis.views import CrashView, WorkloadView

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


def _explored(c: CrashView, rate: float) -> str:
    """How many states were tried, how many distinct ones checked, and how fast."""
    if "crash_distinct_states" not in c.metrics:  # stored before duplicate states were recognised
        return f"{c.tried} states checked at {rate:.2f} states/s ({1 / rate:.1f} s each)"
    distinct = int(c.metrics["crash_distinct_states"])
    per_s = c.metrics.get("crash_distinct_per_s", 0.0)
    share = 1 - distinct / c.tried if c.tried else 0.0
    speed = f" at {per_s:.2f} distinct states/s ({1 / per_s:.1f} s each)" if per_s > 0 else ""
    return (f"{c.tried:,} states tried, {distinct:,} distinct checked{speed}, {share:.0%} duplicates "
            "(an image an earlier state had: checked once, counted for both)")


def coverage_words(c: CrashView) -> str | None:
    """What share of the recording's flush epochs and of its overwriting multi-unit writes the states covered;
    None for a test stored before coverage was counted."""
    m = c.metrics
    if "crash_epochs" not in m:
        return None
    epochs, covered = int(m["crash_epochs"]), int(m.get("crash_epochs_covered", 0))
    writes, torn = int(m.get("crash_overwrites", 0)), int(m.get("crash_overwrites_torn", 0))

    def share(part: int, whole: int) -> str:
        if not whole:
            return ""
        return f" ({part / whole:.1%})" if part / whole < 0.1 else f" ({part / whole:.0%})"

    return (f"the states were cut in {covered:,} of the recording's {epochs:,} flush epochs with unflushed writes"
            f"{share(covered, epochs)} and tore {torn:,} of its {writes:,} multi-unit writes that overwrite earlier "
            f"data{share(torn, writes)}")


def bound_words(c: CrashView) -> str | None:
    """What the states cut at random moments rule out, or the loss rate they show (95%, exact binomial); the
    targeted states are coverage and count in no bound. None for a test stored before states were drawn."""
    b = drawn_bound(c.metrics)
    if b is None:
        return None
    n = b.n
    targeted = c.tried - n
    coverage = (f"; the other {targeted:,} states (chosen where damage is likeliest, or duplicates) are coverage, "
                "not counted in it" if targeted > 0 else "")
    if b.failed:
        return (f"{b.failed:,} of {n:,} distinct states cut at random moments lost or damaged something: "
                f"{loss_rate(b)}{coverage}")
    return f"none lost in {n:,} distinct states cut at random moments: {ruled_out(b)} (exact binomial){coverage}"


def crash_details(view: WorkloadView) -> list[str]:
    """Per crash-tested configuration: settings not exercised, speed, and when each losing state was cut."""
    out = []
    for r in view.rows:
        c = r.crash
        if c is None or c.error:
            continue
        name = r.cell.config.name
        for said in (bound_words(c), coverage_words(c)):
            if said:
                out.append(f"{name}: {said}")
        for gap in c.gaps:
            out.append(f"{name}: ⚠ {gap}")
        out.extend(f"{name}: {note}" for note in c.notes)
        rate = c.metrics.get("crash_states_per_s")
        if rate:
            torn = int(c.metrics.get("crash_torn_states", 0))
            again = int(c.metrics.get("crash_recovery_states", 0))
            out.append(f"{name}: {_explored(c, rate)}; {torn} tore a write, {again} lost power again during recovery")
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
