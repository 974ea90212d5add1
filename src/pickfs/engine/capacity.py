"""The capacity search: for each configuration, the highest fixed rate whose latency percentile stays
within a target (`--latency-target p99<=5ms`), with an interval on that rate.

Every configuration is built and stood up once, as side by side does (the same blocks, servers frozen
outside their own slices, warm-up not counted). Then steps: in each step, every configuration still
searching runs STEP_ROUNDS rounds of fixed-rate slices, side by side in a fresh random order, each at
its own current rate; after the step its target is judged at that rate and its next rate chosen
(stats/capacity.py: double while it passes, halve while it fails, then bisect to within 20%). A
configuration whose search is over stays built but runs no more slices. The slices are saved as they
end, as phase "capacity" (never mixed into the fixed-rate or closed-loop figures); every figure of the
search is derived from them again in the report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace

from pickfs.engine.bench import Bench
from pickfs.engine.ceiling import in_memory_possible, measure
from pickfs.engine.schedule import round_budget, round_order
from pickfs.engine.sidebyside import Member, Slicer, sliced_lines, sliced_words
from pickfs.errors import PickfsError
from pickfs.model import Cell, Method, Phase, Plan, Trial, WorkloadSpec
from pickfs.plan import has_fixed_rate
from pickfs.stats.capacity import FLOOR_RATE, LatencyTarget, Verdict, capacity, judge, next_rate, parse_target
from pickfs.stats.latency import Slice, fixed_rate_block, slice_from
from pickfs.workloads import workload_class

STEP_ROUNDS = 4  # rounds of slices per step: the bootstrap's units for each decision
MAX_STEPS = 10
DEFAULT_START = 100.0  # tx/s, when neither --rate nor the client's ceiling gives a start


@dataclass(frozen=True)
class CapacitySearchWay:
    """Under a latency target (--latency-target), a workload with a fixed-rate mode: the highest rate each
    configuration holds within it."""

    name: str = "capacity search"
    sliced: bool = True
    whole_plan: bool = False

    def fits(self, plan: Plan, spec: WorkloadSpec) -> bool:
        return bool(plan.method.latency_target) and has_fixed_rate(spec.name)

    def method_for(self, plan: Plan, spec: WorkloadSpec, share: float) -> Method:
        """Its own budget whole; one block unless the plan names how many (a search steps each configuration's
        rate on its own images, so more blocks buy it nothing automatically)."""
        m = plan.method
        return replace(m, slices=replace(m.slices, blocks=m.slices.blocks or 1))

    def until(self, m: Method) -> str:
        return f"each one's highest rate within {parse_target(m.latency_target or '').words()} is found"

    def describe(self, m: Method) -> list[str]:
        return sliced_lines(m, f"steps of {STEP_ROUNDS} rounds until {self.until(m)} (at most {MAX_STEPS} steps)")

    def words(self, m: Method) -> str:
        return sliced_words(m, f"steps to the highest rate within {parse_target(m.latency_target or '').words()}")

    def measure(self, bench: Bench, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        CapacitySearch(bench).run(cells, previous, failed)


class CapacitySearch(Slicer):
    measured_phase: Phase = "capacity"

    def __init__(self, bench: Bench) -> None:
        super().__init__(bench)
        self.target: LatencyTarget = parse_target(self.plan.method.latency_target or "")
        self.rates: dict[int, float] = {}

    def slice_spec(self, cell: Cell) -> WorkloadSpec:
        spec = super().slice_spec(cell)
        settings = dict(spec.settings)
        settings["rate"] = self.rates.get(cell.index, float(settings.get("rate") or DEFAULT_START))
        settings.setdefault("arrivals", "poisson")
        settings.setdefault("latency_limit", 0.0)
        return replace(spec, settings=tuple(sorted(settings.items())))

    def run(self, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        if all(c.index in failed for c in cells):
            return
        spec = cells[0].workload
        ceiling = self._ceiling(spec)
        start = float(spec.get("rate") or 0.0) or (ceiling / 4 if ceiling else DEFAULT_START)
        self.rates = {c.index: start for c in cells}
        m = self.plan.method
        slice_s = m.slices.slice_seconds or workload_class(spec.name).slice_seconds
        floor = lowest_rate(self.target, slice_s)
        saved = saved_steps(cells, previous)
        resumed = resume_state(saved, self.target, ceiling, floor)
        for index, rate in resumed.rates.items():
            self.rates[index] = rate
        if saved and not resumed.searching_any(cells, failed):
            self.note(f"{spec.label}: the capacity search was already over")
            return
        budget = round_budget(m)
        self.bench.observer.rounds_started(spec.label, budget.budget_s, m.slices.blocks, len(cells))
        self.note(f"{spec.label}: capacity search for {self.target.words()}, from {start:,.0f}/s"
                  + (f" up to the client's ceiling {ceiling:,.0f}/s" if ceiling else "")
                  + (f"; resumed from {resumed.words()}" if saved else ""))
        first_block = max((t.block for t in previous if t.phase == "capacity"), default=-1) + 1
        with ExitStack() as stack:
            members = self.stand_up_blocks(stack, cells, failed, first_block, m.slices.blocks, 0, budget.budget_s)
            search(members, failed, self.rates, self.target, ceiling, self._step_slices,
                   lambda text: self.note(f"{spec.label}: {text}"),
                   deadline=time.monotonic() + budget.budget_s, floor=floor, resumed=resumed)

    def _ceiling(self, spec: WorkloadSpec) -> float | None:
        if in_memory_possible(spec) is not None:
            return None
        try:
            return measure(spec, self.bench.ledger).max_rate
        except (OSError, ValueError, KeyError, PickfsError):
            return None

    def _step_slices(self, members: list[Member], failed: set[int], first_round: int) -> dict[int, list[Slice]]:
        """STEP_ROUNDS rounds over `members` (each at its current rate); the slices by cell."""
        out: dict[int, list[Slice]] = {}
        for r in range(first_round, first_round + STEP_ROUNDS):
            for member in round_order(members, self.seed, 0, r):
                if member.cell.index in failed:
                    continue
                trial = self.slice_or_fail(member, r, members, failed)
                if trial is None:
                    continue
                block = fixed_rate_block(trial.raw_output)
                if block is not None:
                    cpu_bound = trial.metrics.get("client_cpu_share", 0.0) > 0.9
                    out.setdefault(member.cell.index, []).append(slice_from(member.block, r, block, cpu_bound))
        return out


CAPACITY_SEARCH = CapacitySearchWay()
StepRunner = Callable[[list[Member], set[int], int], dict[int, list[Slice]]]


def lowest_rate(target: LatencyTarget, slice_s: float) -> float:
    """The lowest rate a step can judge the target at: one whose STEP_ROUNDS slices hold enough transactions
    for the percentile to be more than the slowest one (100 for a p99, 1,000 for a p99.9)."""
    return max(FLOOR_RATE, 100 / (100 - target.q) / (STEP_ROUNDS * slice_s))


@dataclass(frozen=True)
class Resumed:
    """Where a resumed search stands: per configuration its verdicts so far, the rate to run next, the slices
    of a step cut short at that rate, the configurations whose search was over, and the next round."""

    verdicts: dict[int, list[Verdict]] = field(default_factory=dict)
    rates: dict[int, float] = field(default_factory=dict)
    carried: dict[int, list[Slice]] = field(default_factory=dict)
    over: frozenset[int] = frozenset()
    next_round: int = 0

    def searching_any(self, cells: list[Cell], failed: set[int]) -> bool:
        return any(c.index not in failed and c.index not in self.over for c in cells)

    def words(self) -> str:
        steps = sum(len(v) for v in self.verdicts.values())
        return f"{steps} step(s) measured, {len(self.over)} configuration(s) done"


def saved_steps(cells: list[Cell], previous: tuple[Trial, ...]) -> dict[int, list[tuple[float, list[Slice]]]]:
    """A run's saved capacity slices: per configuration, (rate, its slices) in the order the rates were tried."""
    indexes = {c.index for c in cells}
    out: dict[int, list[tuple[float, list[Slice]]]] = {}
    for t in sorted(previous, key=lambda t: t.started):
        block = fixed_rate_block(t.raw_output) if t.phase == "capacity" and t.ok and t.cell_index in indexes else None
        if block is None:
            continue
        s = slice_from(t.block, t.round or 0, block, t.metrics.get("client_cpu_share", 0.0) > 0.9)
        steps = out.setdefault(t.cell_index, [])
        if steps and steps[-1][0] == s.offered:
            steps[-1][1].append(s)
        else:
            steps.append((s.offered, [s]))
    return out


def resume_state(saved: dict[int, list[tuple[float, list[Slice]]]], target: LatencyTarget, ceiling: float | None,
                 floor: float) -> Resumed:
    """Each configuration's search judged again from its saved steps (pure): a last step with fewer than
    STEP_ROUNDS slices is finished at its rate; otherwise the next rate follows from the verdicts."""
    out = Resumed()
    over: set[int] = set()
    rounds = [s.round for steps in saved.values() for _, slices in steps for s in slices]
    for index, steps in saved.items():
        complete = steps if len(steps[-1][1]) >= STEP_ROUNDS else steps[:-1]
        out.verdicts[index] = [judge(slices, target, rate) for rate, slices in complete]
        if len(complete) < len(steps):
            out.rates[index], out.carried[index] = steps[-1][0], list(steps[-1][1])
            continue
        nxt = next_rate(out.verdicts[index], ceiling, floor=floor)
        if nxt is None:
            over.add(index)
        else:
            out.rates[index] = nxt
    return replace(out, over=frozenset(over), next_round=(max(rounds) + 1) if rounds else 0)


def search(members: list[Member], failed: set[int], rates: dict[int, float], target: LatencyTarget,
           ceiling: float | None, run_step: StepRunner, note: Callable[[str], None],
           deadline: float | None = None, floor: float = FLOOR_RATE,
           resumed: Resumed | None = None) -> dict[int, list[Verdict]]:
    """Steps until every configuration's search is over (or MAX_STEPS, or the deadline): each step runs the
    members still searching at their rates (`run_step`), judges the target and moves each one's rate. A
    resumed search starts from its saved verdicts, with a step cut short finished at its rate."""
    resumed = resumed or Resumed()
    verdicts: dict[int, list[Verdict]] = {k: list(v) for k, v in resumed.verdicts.items()}
    carried = {k: list(v) for k, v in resumed.carried.items()}
    searching = {x.cell.index for x in members if x.cell.index not in failed and x.cell.index not in resumed.over}
    round_no = resumed.next_round
    for step in range(max((len(v) for v in verdicts.values()), default=0), MAX_STEPS):
        if not searching or (deadline is not None and time.monotonic() > deadline):
            break
        standing = [x for x in members if x.cell.index in searching]
        slices = run_step(standing, failed, round_no)
        round_no += STEP_ROUNDS
        for index in sorted(searching):
            if index in failed or not slices.get(index):
                searching.discard(index)
                continue
            verdict = judge(carried.pop(index, []) + slices[index], target, rates[index])
            verdicts.setdefault(index, []).append(verdict)
            nxt = next_rate(verdicts[index], ceiling, floor=floor)
            name = next(x.cell.config.name for x in members if x.cell.index == index)
            note(f"step {step + 1}: {name} at {rates[index]:,.0f}/s: p{target.q:g} "
                 f"{_ms(verdict.point_s)} -> {'within' if verdict.passed else 'over'} the target"
                 + ("" if nxt is None else f"; next {nxt:,.0f}/s"))
            if nxt is None:
                searching.discard(index)
                c = capacity(verdicts[index])
                note(f"{name}: capacity {c.rate:,.0f}/s")
            else:
                rates[index] = nxt
    return verdicts


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f} ms"
