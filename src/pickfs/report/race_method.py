"""How a race measured its configurations, in lines for every renderer (pure): by default one line for the race
and one for the resolution; in full (--explain, and the files' race log) who left when and why, the baseline's
images and everything flagged."""

from __future__ import annotations

from pickfs.analysis.views import RACE_FAMILY, WorkloadView


def _design(view: WorkloadView) -> str:
    race = view.race
    assert race is not None
    images = {name: s.images for name, s in race.fit.spreads.items()}
    base = view.baseline or ""
    others = sorted({n for c, n in images.items() if c != base})
    each = "" if not others else f", each other in {others[0]}" if len(others) == 1 else \
        f", the others in {others[0]}-{others[-1]}"
    slices = sorted({f"{r.slice_s:g} s" for r in view.rows if r.slice_s})
    return (f"measured side by side in a race: every configuration built at once on fresh filesystems ({base} in "
            f"{images.get(base, 0)} images{each}), {'/'.join(slices) or 'whole-run'} slices taking turns in "
            f"random order, {race.rounds} rounds in {race.minutes * 60:.0f} s; the machine's weather read from every "
            f"disk configuration's slices, each configuration's level from its images")


def by_configuration(lo: float, hi: float) -> str:
    """The resolution's spread over the configurations, as its line ends: ' (17%-20% by configuration)', nothing
    when every configuration's rounds to the same (it read '(10%-10% by configuration)')."""
    return "" if f"{lo:.0%}" == f"{hi:.0%}" else f" ({lo:.0%}-{hi:.0%} by configuration)"


def resolution_line(view: WorkloadView, short: bool = False) -> list[str]:
    """What this run can tell apart, in one line (`short`: as the default view says it)."""
    if not view.resolution:
        return []
    med, lo, hi = view.resolution
    if short:
        return [f"resolution: under {med:.0%} cannot be told apart in this run{by_configuration(lo, hi)}"]
    return [f"resolution: differences under {med:.0%} cannot be told apart on this machine in this run"
            f"{by_configuration(lo, hi)}"]


def race_summary_line(view: WorkloadView) -> str:
    """The race in one line: rounds and time, who left early, what was flagged, and where the log is."""
    race = view.race
    assert race is not None
    flagged = []
    if race.left:
        flagged.append(f"{len(race.left)} left early")
    if race.outlying_images:
        flagged.append(f"{len(race.outlying_images)} outlying images kept")
    if race.outlying_slices:
        flagged.append(f"{race.outlying_slices} outlying slice(s) kept")
    if not race.images_seen:
        flagged.append("one image each (use --blocks 3)")
    said = f"; {', '.join(flagged)}" if flagged else ""
    return f"raced: {race.rounds} rounds, {race.minutes * 60:.0f} s{said} (more: --explain)"


def race_method_lines(view: WorkloadView, full: bool = True) -> list[str]:
    """The race's design, who left when and why, the baseline's images and anything flagged (full); else one
    line for the race and the resolution."""
    race = view.race
    if race is None:
        return []
    if not full:
        return [race_summary_line(view), *resolution_line(view, short=True)]
    fit = race.fit
    base = view.baseline or ""
    out = [_design(view)]
    for name, rnd, why in race.left:
        out.append(f"left the race after round {rnd + 1}: {name}" + (f" ({why}; {RACE_FAMILY})" if why else ""))
    if len(race.baseline_images) > 1:
        lo, hi = min(race.baseline_images), max(race.baseline_images)
        out.append(f"the baseline's {len(race.baseline_images)} images ran within {lo:.2f}x to {hi:.2f}x "
                   "of their mean")
    for name, block, ratio in race.outlying_images:
        out.append(f"outlying image, kept: {name} image {block + 1} ran {ratio:.2f}x its configuration's other "
                   "images")
    if race.outlying_slices:
        out.append(f"{race.outlying_slices} slice(s) lay far from their image's level (kept; was the machine "
                   "disturbed?)")
    if view.resolution:
        out.append(resolution_line(view)[0] + f"; intervals against {base} are simultaneous over every "
                   "comparison shown, and a difference is called exactly when its interval excludes 1")
    if not race.images_seen:
        out.append("one image per configuration: the variation from one mkfs to the next is not in these "
                   "intervals (use --blocks 3 or more)")
    stalled = sum(fit.stalled.values())
    if stalled:
        out.append(f"{stalled} slice(s) measured nothing at all (a stall) and are left out of the levels")
    return out
