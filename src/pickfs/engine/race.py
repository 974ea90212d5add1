"""The race: side by side, where a configuration leaves the rotation once its place is decided.

Every configuration stands in `blocks` images (each a fresh mkfs); the baseline in about
sqrt(k - 1) images per block, since every one of the k - 1 comparisons divides by its level
(Dunnett's rule for many-to-one designs). Rounds visit every image in the rotation once, in a
fresh random order. After the fewest rounds, and after every round from then on, the decision
(stats/decision.py) is taken on everything measured so far, with the weather read from every
configuration (stats/weather.py):
- a configuration whose place is known (slower than another by more than the margin, not able to
  beat the answer by more than the margin, or a non-candidate whose factor is known within the
  target) leaves the rotation, and its time goes to the undecided ones;
- when what limits the undecided comparisons is the spread from one mkfs to the next rather than
  the slices, and the budget has room, a new block is stood up for the configurations still in
  the rotation only;
- the race stops when the decision is settled and every factor known, or at the time budget;
- it stops early when it cannot settle within its budget at the current rate (analysis/margin.py): after
  the fewest rounds to project from, every comparison still open would need, at its most hopeful reading,
  more than twice the time left; the run's notes say so, with what would settle the answer: the figure the
  answer gives (analysis/margin.py `would_settle`, at the answer's level, on the same slices).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass

from pickfs.analysis.margin import (
    Hopeless,
    WouldSettle,
    a_percent,
    cannot_settle,
    margin_words,
    settle_phrase,
    would_settle,
)
from pickfs.analysis.race import (
    Entrant,
    Roles,
    decision_at,
    decision_record,
    judge,
    measured_s,
    race_roles,
    race_series,
    race_target,
)
from pickfs.engine.bench import Bench
from pickfs.engine.schedule import RoundBudget, auto_blocks, round_budget, round_order, standing_up_order
from pickfs.engine.sidebyside import Member, Slicer, is_reference, shared_method, sliced_lines, sliced_words
from pickfs.model import Cell, Method, Plan, RaceRound, StopReason, Trial, WorkloadSpec
from pickfs.risks import config_risks
from pickfs.stack.filesystems import fs_type
from pickfs.stats.decision import ALPHA, RACE_ALPHA, Decision, contrast
from pickfs.stats.paired import Obs
from pickfs.stats.weather import Fit
from pickfs.workloads import workload_class

MAX_IMAGES = 12  # per configuration, blocks added by the race included
SPENT = 0.1  # a resumed race with no more than this share of its budget left had finished


def baseline_copies(others: int, given: int | None = None) -> int:
    """Images of the baseline per block: about sqrt(k - 1) for k - 1 comparisons (pure)."""
    return given if given is not None else max(1, round(math.sqrt(max(others, 1))))


def image_limited(f: Fit, slices_per_image: float) -> bool:
    """Would a new image narrow the comparisons more than more slices of the standing ones? (pure)
    Yes when the spread from one mkfs to the next is larger than what the slices of one image leave
    in its level."""
    if not f.images_seen or slices_per_image <= 0:
        return False
    return f.image_sd**2 > f.slice_sd**2 / slices_per_image


def roles(cells: list[Cell], baseline: str | None, failed: set[int]) -> Roles:
    """Who is a candidate for the answer, in order of preference, as the analysis judges it (pure): a
    configuration with a setting that can lose data is not; no crash test has run yet."""
    live = [c for c in cells if c.index not in failed]
    return race_roles([Entrant(c.config, c.index, bool(config_risks(c.config)), is_reference(c),
                               fs_type(c.config.fstype).in_memory) for c in live], baseline)


def series(cells: list[Cell], history: list[Trial]) -> dict[str, list[Obs]]:
    """The race's observations of `cells` so far, on the speed scale, as the analysis reads them."""
    primary = workload_class(cells[0].workload.name).primary()
    return race_series(history, {c.index: c.config.name for c in cells}, primary.name, primary.higher_is_better)


def rotation(decision: Decision, r: Roles) -> set[str]:
    """The configurations still to be measured: the answer and the undecided, the non-candidates whose
    factor is not known yet, and the baseline while any of those needs it."""
    keep = set(decision.tied) | set(decision.pending)
    if decision.pending and r.baseline:
        keep.add(r.baseline)
    return keep


@dataclass(frozen=True)
class RaceWay:
    """The default way for a workload that can be sliced and is not run at a fixed rate."""

    name: str = "race"
    sliced: bool = True
    whole_plan: bool = False

    def fits(self, plan: Plan, spec: WorkloadSpec) -> bool:
        return plan.method.race and workload_class(spec.name).sliceable and not spec.fixed_rate

    def method_for(self, plan: Plan, spec: WorkloadSpec, share: float) -> Method:
        return shared_method(plan.method, share)

    def until(self, m: Method) -> str:
        return f"the recommendation is settled at {a_percent(m.margin)} margin"

    def describe(self, m: Method) -> list[str]:
        return sliced_lines(m, f"until {self.until(m)}, configurations leaving as their place is decided")

    def words(self, m: Method) -> str:
        return sliced_words(m, f"rounds until the answer is settled at a {m.margin:.0%} margin")

    def measure(self, bench: Bench, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        Race(Slicer(bench), cells).run(previous, failed)


RACE = RaceWay()


@dataclass(frozen=True)
class AfterRound:
    """What the race decided after a round: who stays, whether it is over (and why), the widest interval left, and
    the configurations to stand up a new block for (once the decision is recorded)."""

    members: list[Member]
    done: bool = False
    widest: float | None = None
    grow: tuple[str, ...] = ()
    decision: Decision | None = None
    stop: StopReason | None = None


class Race:
    def __init__(self, slicer: Slicer, cells: list[Cell]) -> None:
        self.slicer = slicer
        self.plan = slicer.plan
        self.cells = cells
        self.by_name = {c.config.name: c for c in cells}
        self.next_image: dict[int, int] = defaultdict(int)
        self.label = cells[0].workload.label
        self.setup_per_image = 0.0
        self.standing: list[Member] = []
        self.blocks_made = 0  # blocks stood up so far: each is made in its own order (standing_up_order)

    # -- the state of the race -----------------------------------------------------------------
    def judge(self, history: list[Trial], failed: set[int]) -> tuple[Fit, Decision, Roles] | None:
        r = roles(self.cells, self.plan.baseline, failed)
        judged = judge(series(self.cells, history), r, self.plan.method, RACE_ALPHA)
        return (*judged, r) if judged is not None else None

    # -- standing up -----------------------------------------------------------------------------
    def _images(self, stack: ExitStack, names: list[str], copies: dict[str, int], failed: set[int],
                standing: list[Member]) -> list[Member]:
        """New images of `names` (`copies` of some); a configuration with an image standing that finds no room
        on the host for another is not failed: the race goes on with the images standing."""
        members = list(standing)
        order = standing_up_order(names, copies, self.slicer.seed, self.blocks_made)
        self.blocks_made += 1
        for name in order:
            cell = self.by_name[name]
            if cell.index in failed or self.next_image[cell.index] >= MAX_IMAGES:
                continue
            image = self.next_image[cell.index]
            self.next_image[cell.index] += 1
            if not self.slicer.stand_up_one(stack, members, cell, image, failed):
                standing_now = sum(1 for x in members if x.cell.index == cell.index)
                self.slicer.note(f"{cell.key}: no room for block {image + 1} on the host: racing on the "
                                 f"{standing_now} image(s) standing")
                self.next_image[cell.index] = MAX_IMAGES  # no more tries for it
        return [x for x in members[len(standing):] if x.cell.index not in failed]

    def _block(self, stack: ExitStack, names: list[str], failed: set[int], answer: str | None,
               standing: list[Member]) -> list[Member]:
        """One image of each of `names`, the baseline (or, without it, the answer) in sqrt(k - 1)."""
        r = roles(self.cells, self.plan.baseline, failed)
        lead = r.baseline if r.baseline in names else answer
        copies = {lead: baseline_copies(len(names) - 1, self.plan.method.slices.baseline_copies)} if lead else {}
        return self._images(stack, names, copies, failed, standing)

    def _first_blocks(self, stack: ExitStack, names: list[str], failed: set[int], budget_s: float) -> list[Member]:
        m = self.plan.method
        t0 = time.monotonic()
        members = self._block(stack, names, failed, None, [])
        took = time.monotonic() - t0
        self.setup_per_image = took / max(len(members), 1)
        blocks = m.slices.blocks if m.slices.blocks is not None else auto_blocks(took, budget_s)
        if m.slices.blocks is None and members:  # none stood up: each one's failure is said, there is no block to time
            self.slicer.note(f"{self.label}: standing up {blocks} block(s) of {len(names)} configurations "
                             f"(the first took {took:.0f} s)")
        for _ in range(blocks - 1):
            live = [n for n in names if self.by_name[n].index not in failed]
            if not live:
                break
            members += self._block(stack, live, failed, None, members)
        return [x for x in members if x.cell.index not in failed]

    # -- the race --------------------------------------------------------------------------------
    def run(self, previous: tuple[Trial, ...], failed: set[int]) -> None:
        m = self.plan.method
        indexes = {c.index for c in self.cells}
        own = [t for t in previous if t.cell_index in indexes]
        for t in own:
            self.next_image[t.cell_index] = max(self.next_image[t.cell_index], t.block + 1)
        self.blocks_made = max(self.next_image.values(), default=0)
        history = [t for t in own if t.phase == "measured" and t.ok and t.round is not None]
        if all(c.index in failed for c in self.cells):
            return
        names = [c.config.name for c in self.cells if c.index not in failed]
        share = self._share(history)
        budget = round_budget(m, share)
        judged = self.judge(history, failed) if history else None
        if judged is not None and _rounds(history) >= budget.min_rounds:
            if judged[1].done or share <= SPENT:
                return  # this comparison had finished (settled, or its budget spent) before the interruption
            names = [n for n in names if n in rotation(judged[1], judged[2])]
        started = time.monotonic()
        self.slicer.bench.observer.rounds_started(self.label, budget.budget_s, m.slices.blocks, len(names))
        first_round = max((t.round for t in history if t.round is not None), default=-1) + 1
        with ExitStack() as stack:
            members = self._first_blocks(stack, names, failed, budget.budget_s)
            self._rounds(stack, members, history, failed, first_round, budget, started)

    def _share(self, history: list[Trial]) -> float:
        """The share of its budget a resumed race has left, from the span of its slices so far."""
        if not history:
            return 1.0
        spent = max(t.started + t.elapsed_s for t in history) - min(t.started for t in history)
        budget = round_budget(self.plan.method).budget_s
        return max(SPENT, 1 - spent / budget) if budget > 0 else 1.0

    def _rounds(self, stack: ExitStack, members: list[Member], history: list[Trial], failed: set[int],
                first_round: int, budget: RoundBudget, started: float) -> None:
        """Rounds over the rotation; every image stays standing (held still) so that a configuration whose
        place comes into doubt again rejoins. Each round's decision, and why the race stopped, is recorded with
        the run as it is acted on."""
        self.standing = list(members)
        round_no, since_block = first_round, 0
        deadline = started + budget.budget_s
        while members:
            t0 = time.monotonic()
            for member in round_order(members, self.slicer.seed, 0, round_no):
                if member.cell.index not in failed:
                    trial = self.slicer.slice_or_fail(member, round_no, self.standing, failed)
                    if trial is not None:
                        history.append(trial)
            members = [x for x in members if x.cell.index not in failed]
            round_no += 1
            since_block += 1
            rounds_done = round_no - first_round
            round_s = time.monotonic() - t0
            after = AfterRound(members)
            if rounds_done >= budget.min_rounds and not budget.fixed:
                after = self._after_round(members, history, failed, round_no, since_block, deadline, round_s,
                                          rounds_done)
                members = after.members
            self.slicer.bench.observer.round_finished(self.label, 0, round_no, after.widest)  # as the notes count
            ends = budget.stop(rounds_done, after.done, time.monotonic(), deadline, round_s)
            stop = after.stop or ("failed" if not members else ends)
            if after.decision is not None or stop is not None:
                self._record(round_no - 1, after.decision, stop)
            if ends is not None:
                break
            if after.grow and after.decision is not None:  # acted on once its decision is recorded
                added = self._grow(stack, after.grow, failed, after.decision.answer)
                members += added
                since_block = 0 if added else since_block

    def _record(self, round_no: int, decision: Decision | None, stop: StopReason | None) -> None:
        """The decision the race acted on after a round (its trials' round), and why it stopped there."""
        b = self.slicer.bench
        b.store.save_race_round(b.run_id, RaceRound(self.label, round_no, decision_record(decision), stop))

    def _after_round(self, members: list[Member], history: list[Trial], failed: set[int], round_no: int,
                     since_block: int, deadline: float, round_s: float, rounds_done: int) -> AfterRound:
        """Decide; let the decided leave; stop when the race cannot settle in its budget; ask for a new block for
        the rest when images limit them."""
        judged = self.judge(history, failed)
        if judged is None:
            return AfterRound(members)
        f, decision, r = judged
        keep = rotation(decision, r)
        why = dict((*decision.out, *decision.decided))
        before = {x.cell.config.name for x in members}
        for name in sorted(before - keep):
            self.slicer.note(f"{self.label}: {name} leaves the race after round {round_no}: {why.get(name, '')}")
        members = [x for x in self.standing if x.cell.config.name in keep and x.cell.index not in failed]
        for name in sorted({x.cell.config.name for x in members} - before):
            self.slicer.note(f"{self.label}: {name} rejoins the race after round {round_no}: its place is in "
                             "doubt again")
        widest = _widest(f, decision, r)
        if decision.done or not members:
            return AfterRound(members, True, widest, decision=decision, stop="settled" if decision.done else "failed")
        m = self.plan.method
        left = deadline - time.monotonic()
        span = measured_s(series(self.cells, history))
        hopeless = cannot_settle(f, decision, r.baseline, m.margin, race_target(m), span, left, rounds_done,
                                 RACE_ALPHA)
        if hopeless is not None:
            answer = decision_at(f, r, m, ALPHA)  # what the answer will say on these slices
            settle = would_settle(f, answer, span, r.candidates)
            text = stop_note(self.label, round_no, m.margin, hopeless, settle, answer.pending, span / 60)
            b = self.slicer.bench
            b.observer.note(text)
            b.store.add_note(b.run_id, text)
            return AfterRound(members, True, widest, decision=decision, stop="cannot settle")
        names = sorted({x.cell.config.name for x in members}, key=lambda n: self.by_name[n].index)
        per_image = len(history) / max(sum(self.next_image.values()), 1)
        room = deadline - time.monotonic() - round_s * 3
        new_images = len(names) + baseline_copies(len(names) - 1, self.plan.method.slices.baseline_copies) - 1
        if (self.plan.method.slices.blocks is None and since_block >= 3 and image_limited(f, per_image)
                and room > new_images * self.setup_per_image * 1.5):
            return AfterRound(members, False, widest, tuple(names), decision)
        return AfterRound(members, False, widest, decision=decision)

    def _grow(self, stack: ExitStack, names: tuple[str, ...], failed: set[int], answer: str | None) -> list[Member]:
        """A new block for `names`, the configurations still in the race; the images it added."""
        added = self._block(stack, list(names), failed, answer, self.standing)
        if added:
            self.slicer.note(f"{self.label}: a new block for the {len(names)} configurations still in "
                             f"the race ({len(added)} images)")
            self.standing += added
        return added


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _names(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def stop_note(label: str, round_no: int, margin: float, hopeless: Hopeless, settle: WouldSettle,
              pending: tuple[str, ...], measured_min: float) -> str:
    """Why a race stopped before its budget, with what would settle its answer: the figure and the words the
    answer gives on the same slices (`settle`, at the answer's level, against the configuration it prefers), and
    the factors not yet known (pure)."""
    head = (f"{label}: the race stops after round {round_no} with {_minutes(hopeless.left_s)} of its budget left: "
            f"at a {margin_words(margin)} margin it cannot settle within the budget at the current rate")
    parts = []
    if settle.contenders and settle.preferred is not None:
        parts.append(f"{_names(settle.contenders)} against {settle.preferred}: "
                     f"{settle_phrase(settle.more_s, settle.wider, measured_min, widened_for=settle.widened_for)}")
    if pending:
        parts.append(f"{_names(pending)}: {'its factor is' if len(pending) == 1 else 'their factors are'} not yet "
                     "known within the target")
    if not parts:
        parts.append("at the answer's 95% level it is settled")
    return f"{head} ({'; '.join(parts)})"


def _rounds(history: list[Trial]) -> int:
    return len({t.round for t in history if t.round is not None})


def _widest(f: Fit, decision: Decision, r: Roles) -> float | None:
    """The widest 95% half-width among what is still undecided, against the answer or the baseline."""
    ref = decision.answer or r.baseline
    widths = []
    for name in (*decision.undecided, *decision.pending):
        c = contrast(f, name, ref) if ref and ref != name else None
        if c is not None:
            lo, hi = c.interval(0.95)
            widths.append(math.expm1((hi - lo) / 2))
    return max(widths, default=None)
