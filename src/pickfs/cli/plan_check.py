"""`pickfs plan check FILE` and `pickfs run --dry-run`: the validated matrix, what this machine lacks,
and the time it would take, creating nothing (no work directory, results database, ledger or loop device)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from pickfs import console
from pickfs.analysis.views import short_flag
from pickfs.cli.examples import examples
from pickfs.engine.choice import method_lines as how_measured_lines
from pickfs.model import Plan
from pickfs.plan import load_plan_file
from pickfs.plan.method import fault_plans
from pickfs.risks import config_risks
from pickfs.stack.targets import target_kind
from pickfs.usecases.preview import Preview
from pickfs.usecases.run import RunRequest, Silent, run_plan


def _size(n: int) -> str:
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor:
            return f"{n / factor:g} {unit}"
    return f"{n} bytes"


def _minutes(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def method_lines(plan: Plan) -> list[str]:
    """How the plan is measured: each way the executor takes (engine/choice.py), then the crash test, the fault and
    what each run does first."""
    m = plan.method
    lines = how_measured_lines(plan)
    if m.crash.states:
        states = (f"{m.crash.states} power-cut states per cell, then more for {m.crash.time:g} s of checking"
                  if m.crash.time else f"{m.crash.states} power-cut states per cell")
        lines.append(f"crash test: {states}, {m.crash.duration:g} s of commits recorded on a {_size(m.crash.size)} "
                     "image")
    if m.faults.kinds:
        said = "; ".join(f.text for f in fault_plans(m))
        lines.append(f"fault: {said}: run by pickfs crashtest --plan, which measures no speed (pickfs run refuses "
                     "this plan)")
    extras = [x for x, on in (("drop caches", m.whole.drop_caches), ("monitors", m.monitors)) if on]
    lines.append(f"each run: {', '.join(extras) or 'no cache drop, no monitors'}; the device idle "
                 f"{m.quiesce_seconds:g} s first")
    return lines


def describe(preview: Preview) -> list[str]:
    """The dry run's report, one line each (pure but for the tables of risks)."""
    plan = preview.plan
    t = plan.target
    kind = target_kind(t)
    where = kind.describe(t, _size(t.size_bytes))
    cells = plan.cells()
    lines = [f"plan: {len(plan.configs)} configuration(s) x {len(plan.workloads)} workload(s) = {len(cells)} cells, "
             f"on {where}"]
    if kind.images and t.size_auto:
        lines.append(f"images sized to the job: {_size(t.size_bytes)} (sparse; --size to choose)")
    if t.memory_bytes:
        scale = f"; data grown to {t.scale:g}x the memory" if t.scale else ""
        lines.append(f"memory: {_size(t.memory_bytes)} per configuration, its server and client in a memory-limited "
                     f"control group{scale}")
    lines.append("configurations:" + (f" (baseline {plan.baseline})" if plan.baseline else ""))
    for c in plan.configs:
        parts = [f"fs {c.fstype}"]
        if c.path:
            parts.append(f"path {c.path}")
        parts.append(f"mkfs {' '.join(c.mkfs_options) or '(defaults)'}")
        parts.append(f"mount {','.join(c.mount_options) or '(defaults)'}")
        queue = kind.scheduler_queue(t)
        parts.append(f"scheduler {c.scheduler or '(the device default)'}" + (f" on {queue}" if c.scheduler and queue
                                                                              else ""))
        if c.base:
            parts.append(f"base {c.base}")
        if c.age:
            parts.append(f"aged to {c.age:.0%} ({c.age_rounds} rounds, seed {c.age_seed})")
        flags = ", ".join(short_flag(r) for r in config_risks(c))
        lines.append(f"  {c.name}: {'; '.join(parts)}" + (f"  ⚠ {flags}" if flags else ""))
    lines.append("workloads:")
    for w in plan.workloads:
        settings = ", ".join(f"{k}={v}" for k, v in w.settings)
        lines.append(f"  {w.label} ({w.name}): {settings or '(defaults)'}")
    lines.append("method:")
    lines += [f"  {x}" for x in method_lines(plan)]
    for warning in plan.warnings:
        lines.append(f"warning: {warning}")
    missing, problems = preview.lacks(), preview.problems
    if missing or problems:
        lines.append("this machine lacks:")
        lines += [f"  {p}" for p in problems]
        lines += [f"  {lack.line()}" for lack in missing]  # one line per missing thing, with the cells needing it
    else:
        lines.append("this machine lacks: nothing; every cell can run here")
    estimates = preview.estimates
    if estimates:
        total = sum(e.seconds for e in estimates)
        lines.append(f"time: about {_minutes(total)}" + (" plus the crash tests" if plan.method.crash.states else "")
                     + _crash_budget(plan))
        lines += [f"  {e.label}: {_minutes(e.seconds)}, {e.how}" for e in estimates]
    elif plan.method.crash.states:
        lines.append("time: the crash tests' (not estimated: it depends on the writes recorded)" + _crash_budget(plan))
    return lines


def _crash_budget(plan: Plan) -> str:
    """What a budget of checking time says of the crash tests' time (pure)."""
    m = plan.method
    if not m.crash.states or not m.crash.time:
        return ""
    cells = len(plan.cells())
    return (f"; their checking about {_minutes(m.crash.time * cells)} ({_minutes(m.crash.time)} per cell, "
            "less where one stops early), each after its recording")


def show_plan(preview: Preview) -> None:
    """Print the dry run's report to standard output; NothingCanRun (exit 3) after it when no cell can run here."""
    for line in describe(preview):
        console.show(Text(line))
    console.info("dry run: nothing was created")
    error = preview.error()
    if error is not None:
        raise error


@click.group("plan", epilog=examples('pickfs plan check examples/r2-postgresql.toml'))
def command() -> None:
    """Check a plan file without running it: the matrix, what this machine lacks, and the time."""


@command.command("check", epilog=examples('pickfs plan check examples/r2-postgresql.toml',
         'pickfs plan check my-plan.toml && pickfs run --plan my-plan.toml'))
@click.argument("plan_file", type=click.Path(path_type=Path))
def check(plan_file: Path) -> None:
    """Validate PLAN_FILE completely and show what `pickfs run --plan PLAN_FILE` would do; creates nothing.

    Exits 3 when this machine can run no cell of the plan, 2 when the plan is invalid."""
    show_plan(dry_run(load_plan_file(plan_file)))


def dry_run(plan: Plan) -> Preview:
    """What `pickfs run --plan` would find here, from the use case the run goes through (nothing is created)."""
    outcome = run_plan(RunRequest(plan=plan, dry_run=True), Silent())
    assert outcome.preview is not None  # a dry run's outcome is its preview
    return outcome.preview
