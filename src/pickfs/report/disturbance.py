"""A disturbed run said first, before the answer, in every format (pure): the line, and the JSON object.

A run whose slices did not record the machine's load (stored before, or monitors off) has no
disturbance: nothing is said, and the JSON has no `disturbance` key. A recorded run that was not
disturbed says nothing either; its JSON carries the figures with `disturbed: false`. A disturbed run says
whether its answer changes without the busy slices (its answer and figures are the quiet slices' where those
suffice, changed or not); a run that
accepted a busy machine as the condition to measure (by the plan or by --accept-busy: the stored plan
holds it either way, and the words fit both) says which condition its answer is for."""

from __future__ import annotations

from typing import Any

from pickfs.stats.disturbance import DISTURBED_SHARE, OTHERS_SHARE, STEAL_SHARE, Disturbance


def _busy_words(d: Disturbance) -> str:
    what = []
    if d.by_others:
        names = f" ({', '.join(d.others)})" if d.others else ""
        what.append(f"other processes took {d.other_cores:.1f} of {d.cpus} cores{names}")
    if d.by_steal:
        what.append(f"the hypervisor stole {d.steal_share:.0%} of the CPU time")
    if d.cpu_pressure is not None:
        what.append(f"some task waited for a CPU {min(d.cpu_pressure, 1):.0%} of the time")
    return (f"the machine was busy for {d.busy_share:.0%} of this run ({d.busy_slices} of {d.slices} slices): "
            f"{'; '.join(what)}")


def _names(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def disturbance_line(d: Disturbance | None) -> str | None:
    """'the machine was busy for 40% of this run ...', or None when there is nothing to say. A run that accepted
    a busy machine says which condition its answer is for, busy or not."""
    if d is None:
        return None
    if d.accepted:
        if not d.disturbed:
            return ("condition: a busy machine was accepted, and the machine was quiet: the answer below is for a "
                    "quiet machine.")
        return (f"condition: a busy machine, which this run accepts as the condition to measure: {_busy_words(d)}. "
                "The answer below is for a machine this busy, not for a quiet one.")
    if not d.disturbed:
        return None
    line = f"disturbed: {_busy_words(d)}."
    said = []
    if d.changes:
        said.append(f"Without the busy slices the answer for {_names(d.changes)} differs: it is decided on the "
                    f"{d.slices - d.busy_slices} quiet slices alone, its time measured and what more time would "
                    "settle it count those alone (--accept-busy to decide on a busy machine).")
    same = tuple(label for label in d.on_quiet if label not in d.changes)
    if same:
        said.append(f"Without the busy slices the answer for {_names(same)} is the same; its figures count the "
                    f"{d.slices - d.busy_slices} quiet slices alone (--accept-busy to count every slice).")
    if d.unchecked:
        said.append(f"Too few quiet slices to answer {_names(d.unchecked)} without the busy ones: that answer is the "
                    "busy machine's.")
    if said:
        return " ".join([line, *said])
    if d.rechecked:
        return f"{line} Without the busy slices the answer is the same."
    return f"{line} The answer below may be the busy machine's as much as the configurations'."


def disturbance_dict(d: Disturbance) -> dict[str, Any]:
    """The JSON export's `disturbance` object: the figures, the thresholds they were judged by, the verdict."""
    return {
        "disturbed": d.disturbed,
        "busy_share": d.busy_share,
        "slices": d.slices,
        "busy_slices": d.busy_slices,
        "seconds": d.seconds,
        "busy_seconds": d.busy_seconds,
        "cpus": d.cpus,
        "other_cores": d.other_cores,
        "steal_share": d.steal_share,
        "cpu_pressure": d.cpu_pressure,
        "io_pressure": d.io_pressure,
        "busy_by_others": d.by_others,
        "busy_by_steal": d.by_steal,
        "others": list(d.others),
        "accepted": d.accepted,
        "decided_on_quiet_slices": list(d.changes),
        "figured_on_quiet_slices": list(d.on_quiet),
        "too_few_quiet_slices": list(d.unchecked),
        "thresholds": {"others_share_of_cpus": OTHERS_SHARE, "steal_share": STEAL_SHARE,
                       "disturbed_share_of_time": DISTURBED_SHARE},
    }
