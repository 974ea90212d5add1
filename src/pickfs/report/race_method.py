"""How a race measured its configurations, in lines for every renderer (pure)."""

from __future__ import annotations

from pickfs.analysis.views import WorkloadView


def race_method_lines(view: WorkloadView) -> list[str]:
    """The race's design, who left when and why, the baseline's images and anything flagged."""
    race = view.race
    if race is None:
        return []
    fit = race.fit
    images = {name: s.images for name, s in fit.spreads.items()}
    base = view.baseline or ""
    others = sorted({n for c, n in images.items() if c != base})
    each = "" if not others else f", each other in {others[0]}" if len(others) == 1 else \
        f", the others in {others[0]}-{others[-1]}"
    slices = sorted({f"{r.slice_s:g} s" for r in view.rows if r.slice_s})
    out = [f"measured side by side in a race: every configuration built at once on fresh filesystems ({base} in "
           f"{images.get(base, 0)} images{each}), {'/'.join(slices) or 'whole-run'} slices taking turns in "
           f"random order, {race.rounds} rounds in {race.minutes * 60:.0f} s; the machine's weather read from every "
           f"disk configuration's slices, each configuration's level from its images"]
    for name, rnd, why in race.left:
        out.append(f"left the race after round {rnd + 1}: {name}" + (f" ({why})" if why else ""))
    if len(race.baseline_images) > 1:
        lo, hi = min(race.baseline_images), max(race.baseline_images)
        out.append(f"the baseline's {len(race.baseline_images)} images ran within {lo - 1:+.0%} to {hi - 1:+.0%} "
                   "of their mean")
    for name, block, ratio in race.outlying_images:
        out.append(f"outlying image, kept: {name} image {block + 1} ran {ratio - 1:+.0%} against its "
                   "configuration's other images")
    if race.outlying_slices:
        out.append(f"{race.outlying_slices} slice(s) lay far from their image's level (kept; was the machine "
                   "disturbed?)")
    if view.resolution:
        med, lo, hi = view.resolution
        out.append(f"resolution: differences under {med:.0%} cannot be told apart on this machine in this run "
                   f"({lo:.0%}-{hi:.0%} by configuration); intervals against {base} are simultaneous over every "
                   "comparison shown, and a difference is called exactly when its interval excludes 1")
    if not race.images_seen:
        out.append("one image per configuration: the variation from one mkfs to the next is not in these "
                   "intervals (use --blocks 3 or more)")
    stalled = sum(fit.stalled.values())
    if stalled:
        out.append(f"{stalled} slice(s) measured nothing at all (a stall) and are left out of the levels")
    return out
