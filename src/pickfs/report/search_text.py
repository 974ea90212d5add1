"""A search's result in the terminal (pure): what mattered, the path, and the answer as a setup to paste.

Renders the plain data of pickfs.search.outcome (the same the JSON holds), so a stored search renders
without the search's code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pickfs.analysis.setup import Setup


def _pct(ratio: float) -> str:
    return f"{ratio - 1:+.0%}"


def _interval(e: Mapping[str, Any]) -> str:
    return f"{_pct(e['low'])} to {_pct(e['high'])}"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _effect_name(e: Mapping[str, Any]) -> str:
    return "filesystem" if e["dimension"] == "filesystem" else f"{e['filesystem']} {e['dimension']}"


def _verdict(e: Mapping[str, Any], margin: float) -> str:
    return "" if e["measurable"] else f"within ±{margin:.0%}" if e.get("within_margin") else "not resolved"


def _what_mattered(d: Mapping[str, Any]) -> list[str]:
    effects = d["effects"]
    if not effects:
        return ["What mattered: the screening measured no effect (no configuration beside its defaults finished)."]
    margin = float(d["margin"])
    best: dict[str, Mapping[str, Any]] = {}
    for e in effects:  # largest first already
        best.setdefault(_effect_name(e), e)
    rows = [(_effect_name(e), e["value"], _pct(e["ratio"]), _interval(e), _verdict(e, margin)) for e in best.values()]
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    out = ["What mattered: the dimensions by their largest effect, each value changed alone against its "
           "filesystem's defaults in the screening race (a filesystem's defaults against the first one's); "
           "simultaneous 95% intervals:"]
    out += [f"  {a:<{w[0]}}  {b:<{w[1]}}  {c:>{w[2]}}  [{i:<{w[3]}}]  {n}".rstrip() for a, b, c, i, n in rows]
    none = [e for e in effects if not e["measurable"]]
    if none:
        out.append("No measurable difference: " + "; ".join(
            f"{_effect_name(e)} {e['value']} ({_pct(e['ratio'])}, {_interval(e)}, {_verdict(e, margin)})"
            for e in none) + ".")
    if any(not e["measurable"] and not e.get("within_margin") for e in effects):
        out.append(f"Not resolved: the interval includes no change but reaches past ±{margin:.0%}, so the value is "
                   "not shown to be harmless either; a longer --max-time narrows it.")
    return out


def _grouped(what: str, entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per (round, reason) for the configurations that left together for the same reason (pure):
    "left after round 3, ext4+defaults is faster by more than 5%: a (+305%, at least +157%); b (...)"."""
    groups: dict[tuple[str, str], list[str]] = {}
    for x in entries:
        head, _, figures = str(x.get("why") or "").partition(": ")
        key = (what.format(round=x.get("round", "")), head)
        groups.setdefault(key, []).append(f"{x['name']} ({figures})" if figures else x["name"])
    return [f"    {when}{', ' + head if head else ''}: {'; '.join(names)}" for (when, head), names in groups.items()]


def _path(d: Mapping[str, Any]) -> list[str]:
    out = ["The path:"]
    for s in d["stages"]:
        state = (f"answer {s['answer']}" if s["settled"] else
                 f"could not tell apart {', '.join(s['tied'])}" if s["tied"] else "no answer")
        out.append(f"  {s['name']} (run {s['run_id']}): {len(s['configurations'])} configurations, {s['images']} "
                   f"images, {_minutes(s['elapsed_s'])} of {_minutes(s['budget_s'])}: {state}")
        if s.get("cut"):
            out.append(f"    cut: {s['cut']}")
        if s.get("same_as"):
            out.append("    the same setup, raced once: " + ", ".join(f"preset {x['preset']} as {x['raced_as']}"
                                                                   for x in s["same_as"]))
        gone = {x["name"] for x in s["left"]}
        out += _grouped("left after round {round}", s["left"])
        out += _grouped("out", [x for x in s["out"] if x["name"] not in gone])  # the rest was said as it left
    for why in d["skipped"]:
        out.append(f"  not started: {why}")
    return out


def _behind(best: Mapping[str, Any]) -> str:
    """Why the answer may be slower than the fastest preset (pure)."""
    if best["high"] < 1:
        return ("; the preset is faster, and the race could not yet tell it was faster by more than the margin, "
                "where the answer (the default, or fewer settings changed) is preferred")
    if best["ratio"] < 1:
        return "; within what the race can tell, the answer is preferred for being the default or changing fewer settings"
    return ""


def _answer(d: Mapping[str, Any]) -> list[str]:
    a = d["answer"]
    if a is None:
        return ["The answer: none (no stage gave one; each stage's run shows why: pickfs report RUN)."]
    settled = "settled" if a["settled"] else f"not settled: could not tell it from {', '.join(a['tied'][1:])}"
    out = [f"The answer: {a['name']} ({settled})", f"  {a['description']}"]
    adv = a["advantage"]
    if adv is not None:
        out.append(f"  {adv['ratio']:.2f}x the distribution's default {adv['over']} (95%: {adv['low']:.2f}x to "
                   f"{adv['high']:.2f}x), in the final race")
    elif a["name"] == d["stages"][-1]["configurations"][0]:
        out.append("  the distribution's default itself: " + ("nothing searched was faster by more than the margin"
                   if a["settled"] else "preferred on the final race's estimates, not settled"))
    best = a["best_preset"]
    if best is not None and best.get("same"):
        out.append(f"  the fastest preset, {best['over']}, is this same setup")
    elif best is not None:
        out.append(f"  against the fastest preset, {best['over']}: {best['ratio']:.2f}x (95%: {best['low']:.2f}x to "
                   f"{best['high']:.2f}x){_behind(best)}")
    for x in a.get("presets_not_raced", ()):
        out.append(f"  preset {x['name']} not raced: {x['why']}")
    s = a["setup"]
    out += ["  The setup (replace DEVICE and the data directory with yours):",
            *(f"    {line}" for line in Setup(**s).lines())]
    return out


def render(d: Mapping[str, Any]) -> str:
    sp = d["space"]
    head = [f"search {d['search']}: {d['workload']['label']} over a space of {sp['size']} configurations "
            f"({', '.join(sp['filesystems'])}), {sp['allowed']} of them allowed; {d['configurations_built']} built "
            f"({d['images_built']} images) in {len(d['stages'])} stage(s)"]
    for p in sp["pruned"]:
        head.append(f"  pruned before anything ran: {p}")
    for u in sp["unsafe_left_out"]:
        head.append(f"  left out as unsafe (--unsafe to search them): {u}")
    return "\n".join([*head, "", *_what_mattered(d), "", *_path(d), "", *_answer(d)]) + "\n"
