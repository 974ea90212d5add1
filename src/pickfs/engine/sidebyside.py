"""Side by side: every configuration of a comparison built at once, measured in short slices
that take turns, so that each is compared with the baseline measured seconds, not minutes, away.

Every configuration is built `blocks` times (each block a fresh mkfs, image and loop device of
every configuration), all standing at once: each gets its server, its data and its warm-up
(never counted); servers are held still (SIGSTOP) except during their own slice. Then rounds:
every configuration of every block once, in a fresh random order. A slice is one short run of
the workload followed by syncfs() of that filesystem, timed as part of the slice, so nothing it
left dirty is written back during another's slice. Every slice is saved the moment it ends.
Because the blocks stand side by side too, they see the same weather: what differs between
them is the mkfs, not the minute they were measured in. Rounds stop when every comparison's
interval is narrow enough, or when the time budget is spent.
"""

from __future__ import annotations

import time
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from pickfs.engine.bench import Bench, Once
from pickfs.engine.schedule import (
    SIDE_BY_SIDE_BUDGET,
    RoundBudget,
    auto_blocks,
    round_budget,
    round_order,
    run_seed,
)
from pickfs.engine.standup import stand_up
from pickfs.errors import NoRoom
from pickfs.model import Cell, Method, Phase, Plan, Trial, WorkloadSpec
from pickfs.monitors.sampler import RunMonitor, cell_scope, read_disk
from pickfs.services.base import Endpoint
from pickfs.services.freeze import Freezer
from pickfs.stack.cgroups import MemoryGroup
from pickfs.stack.filesystems import fs_type
from pickfs.stack.provision import Provisioned
from pickfs.stack.quiesce import syncfs
from pickfs.stack.signals import check_interrupt
from pickfs.stats.paired import Obs, paired_compare_all, primary_value, settled
from pickfs.workloads import workload_class
from pickfs.workloads.base import Workload


@dataclass
class Member:
    """One configuration standing in a block: its filesystem, server and workload."""

    cell: Cell
    prov: Provisioned
    endpoint: Endpoint | None
    workload: Workload
    freezer: Freezer | None
    block: int = 0  # which copy: every block is a fresh mkfs of every configuration
    mount: dict[str, Any] = field(default_factory=dict)
    group: MemoryGroup | None = None  # the memory limit its server and client run under


class Slicer:
    """Configurations stood up in blocks, all at once, and measured in slices that take turns: what side by side,
    the race and the capacity search share."""

    measured_phase: Phase = "measured"  # what a measured slice is saved as (the capacity search's steps: "capacity")

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.plan = bench.plan
        self.seed = run_seed(bench.run_id, bench.plan.method.seed)

    def note(self, text: str) -> None:
        self.bench.observer.note(text)

    # -- one configuration ------------------------------------------------------------------------
    def stand_up(self, stack: ExitStack, cell: Cell, block: int) -> Member:
        """Build one configuration, start its server, prepare and warm it up; leave its server frozen."""
        m, b = self.plan.method, self.bench
        growth = workload_class(cell.workload.name).image_growth(cell.workload, self.plan.target.size_bytes)
        s = stand_up(stack, self.plan, b.ledger, b.store, b.run_id, cell, block=block, expect_bytes=growth)
        freezer = Freezer(s.endpoint.pidfile) if s.endpoint and s.endpoint.pidfile and m.slices.freeze_idle else None
        if freezer is not None:
            stack.callback(freezer.thaw)  # never leave a server stopped, whatever happens
        member = Member(cell, s.prov, s.endpoint, s.workload, freezer, block, mount=s.mount, group=s.group)
        for _ in range(m.warmup):
            self.slice(member, None, [])
        if freezer is not None:
            freezer.freeze()
        return member

    def stand_up_one(self, stack: ExitStack, members: list[Member], cell: Cell, block: int, failed: set[int]) -> bool:
        """One more image of `cell` among `members`. False when the host has no room for a later block of a
        configuration that has one standing: it is not failed (recorded failed, it would be dropped from the
        comparison and never retried by --resume)."""
        with self.bench.failing(cell, failed, block=block):
            try:
                # a configuration that fails to stand up is undone at once (its server must not
                # run on, unfrozen, through everyone else's rounds)
                with ExitStack() as own:
                    members.append(self.stand_up(own, cell, block))
                    stack.enter_context(own.pop_all())
            except NoRoom:
                if any(x.cell.index == cell.index for x in members):
                    return False
                raise
        return True

    def slice_spec(self, cell: Cell) -> WorkloadSpec:
        cls = workload_class(cell.workload.name)
        return cls.slice_spec(cell.workload, self.plan.method.slices.slice_seconds or cls.slice_seconds)

    def slice(self, member: Member, round_no: int | None, others: list[Member]) -> Trial:
        """One slice: thaw, run, syncfs (counted), freeze; saved at once. round None: a warm-up."""
        check_interrupt()
        m, cell = self.plan.method, member.cell
        spec = self.slice_spec(cell)
        neighbours = [o.prov.disk for o in others if o is not member and o.prov.disk]
        before = {d: read_disk(d) for d in neighbours}
        measured = round_no is not None
        # the monitors attribute I/O to this cell's own processes and device threads only
        scope = cell_scope(member.prov.disk, member.prov.info.fstype,
                           member.endpoint.pidfile if member.endpoint else "",
                           tuple(o.endpoint.pidfile for o in others if o is not member and o.endpoint),
                           tuple((o.prov.disk, o.prov.info.fstype) for o in others if o is not member))
        monitor = RunMonitor(member.prov.disk, m.monitor_interval, scope=scope,
                             mountpoint=member.prov.info.mountpoint or None) if m.monitors and measured else None

        def figures(sync_s: float) -> dict[str, float]:
            out = {"slice_s": workload_class(cell.workload.name).run_seconds(spec), "syncfs_s": sync_s}
            wrote = 0
            for d, b in before.items():
                a = read_disk(d)
                if a is not None and b is not None:
                    wrote += a.bytes_written - b.bytes_written
            if neighbours:
                out["idle_neighbours_wrote_bytes"] = float(wrote)
            return out

        # the server thawed before the slice's timing starts and frozen again after it ends: neither is counted
        if member.freezer is not None:
            member.freezer.thaw()
        try:
            return self.bench.measure_once(cell, member, Once(
                spec, self.measured_phase if measured else "warmup",
                repetition=round_no if round_no is not None else 0, block=member.block, round=round_no,
                monitor=monitor, inside=member.group.joined if member.group else nullcontext,
                after=lambda: syncfs(member.prov.datadir) if member.prov.info.mountpoint else 0.0, figures=figures,
                wall_clock=True))
        finally:
            if member.freezer is not None and measured:
                member.freezer.freeze()

    def slice_or_fail(self, member: Member, round_no: int, others: list[Member], failed: set[int]) -> Trial | None:
        """A measured slice; None when it failed (the configuration is then failed, and why is recorded)."""
        with self.bench.failing(member.cell, failed, block=member.block):
            return self.slice(member, round_no, others)
        return None

    # -- blocks -----------------------------------------------------------------------------------
    def stand_up_blocks(self, stack: ExitStack, cells: list[Cell], failed: set[int], first: int,
                        todo: int | None, done: int, budget_s: float) -> list[Member]:
        """`todo` blocks of every configuration (None: as many as fit a share of the budget, judged by the
        first block); a configuration that fails to stand up is marked failed and left out."""
        started = time.monotonic()
        members: list[Member] = []
        block = first
        while todo is None or block < first + todo:
            for cell in cells:
                if cell.index not in failed and not self.stand_up_one(stack, members, cell, block, failed):
                    # the host has no room for another block: the comparison runs on the blocks standing
                    self.note(f"{cell.key}: no room for block {block + 1} on the host: measuring on the "
                              f"{block - first} block(s) standing")
                    return [x for x in members if x.cell.index not in failed]
            if all(c.index in failed for c in cells):  # none stood up: each one's failure is said
                break
            if todo is None:
                todo = max(1, auto_blocks(time.monotonic() - started, budget_s) - done)
                self.note(f"{cells[0].workload.label}: standing up {todo} block(s) of {len(cells)} "
                          f"configurations (the first took {time.monotonic() - started:.0f} s)")
            block += 1
        return [x for x in members if x.cell.index not in failed]


def shared_method(m: Method, share: float) -> Method:
    """The method a workload is measured with when it has `share` of the time budget (pure): the client
    counts of one workload share its budget, so --clients 1,2,4,8 takes the time one workload would. A run
    of a fixed number of rounds with no time budget keeps its rounds."""
    if share >= 1.0 or (m.slices.rounds is not None and m.max_seconds is None and m.target_ci is None):
        return m
    return replace(m, max_seconds=(m.max_seconds if m.max_seconds is not None else SIDE_BY_SIDE_BUDGET) * share)


def sliced_lines(m: Method, until: str, what: str = "every configuration") -> list[str]:
    """How a way measuring in slices stands its configurations up and takes its rounds, for the dry run (pure)."""
    budget = round_budget(m)
    rounds = f"exactly {m.slices.rounds} rounds" if budget.fixed else \
        f"at least {budget.min_rounds} rounds, then {until}" + \
        (f" (at most {m.max_runs})" if m.target_ci is not None else "")
    slices = f"{m.slices.slice_seconds:g} s" if m.slices.slice_seconds else "the workload's own length"
    times = "as many times as fit a fifth of the budget (2-6)" if m.slices.blocks is None else f"{m.slices.blocks} time(s)"
    lines = [f"{what} built {times} (each a fresh mkfs), all standing at once",
             f"  rounds: {rounds}; each round visits every configuration of every block once",
             f"  slices: {slices}, {m.warmup} warm-up slice(s) per configuration",
             f"  budget: {budget.budget_s / 60:g} min per workload; seed "
             f"{m.seed if m.seed is not None else 'from the run id'}"]
    if m.accept_busy:
        lines.append("  a busy machine is the condition to measure (accept_busy): every slice counts")
    return lines


def sliced_words(m: Method, until: str) -> str:
    """A way measuring in slices, in a few words (pure)."""
    rounds = f"{m.slices.rounds} rounds" if m.slices.rounds else until
    blocks = "automatic blocks" if m.slices.blocks is None else f"{m.slices.blocks} block(s)"
    return f"{blocks}, {rounds}, after {m.warmup} warm-up slice(s)"


@dataclass(frozen=True)
class SideBySideWay:
    """Side by side without the race (--no-race): every configuration in every round until each comparison with
    the baseline is narrow enough, or the budget is spent."""

    name: str = "side by side"
    sliced: bool = True
    whole_plan: bool = False

    def fits(self, plan: Plan, spec: WorkloadSpec) -> bool:
        return workload_class(spec.name).sliceable

    def method_for(self, plan: Plan, spec: WorkloadSpec, share: float) -> Method:
        return shared_method(plan.method, share)

    def until(self, m: Method) -> str:
        return f"every interval is within ±{round_budget(m).target:.0%}"

    def describe(self, m: Method) -> list[str]:
        return sliced_lines(m, f"until {self.until(m)}")

    def words(self, m: Method) -> str:
        return sliced_words(m, "rounds until the intervals settle")

    def measure(self, bench: Bench, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        SideBySide(bench).run(cells, previous, failed)


SIDE_BY_SIDE = SideBySideWay()


class SideBySide(Slicer):
    """Every configuration in every round, to the end."""

    # -- the comparison's state so far ----------------------------------------------------
    def series(self, cells: list[Cell], trials: list[Trial]) -> dict[str, list[Obs]]:
        by_index = {c.index: c for c in cells}
        out: dict[str, list[Obs]] = {c.config.name: [] for c in cells}
        for t in trials:
            cell = by_index.get(t.cell_index)
            if cell is None or t.phase != "measured" or not t.ok or t.round is None:
                continue
            value = primary_value(t.metrics, workload_class(cell.workload.name).primary().name)
            if value is not None:
                out[cell.config.name].append(Obs(t.block, t.started + t.elapsed_s / 2, value, t.round))
        return out

    def baseline(self, cells: list[Cell], series: dict[str, list[Obs]]) -> str | None:
        names = [c.config.name for c in cells if series.get(c.config.name)]
        if self.plan.baseline in names:
            return self.plan.baseline
        return names[0] if names else None

    def settled(self, cells: list[Cell], trials: list[Trial], standing: list[Cell],
                target: float) -> tuple[bool, float | None]:
        """(every comparison narrow enough, the widest half-width so far). References (tmpfs, the
        raw device) are left out: their ratio to a disk moves with the disk's speed by nature."""
        series = self.series(cells, trials)
        base = self.baseline(cells, series)
        if base is None:
            return False, None
        candidates = {c.config.name for c in standing if not is_reference(c)} | {base}
        comps = paired_compare_all({k: v for k, v in series.items() if k in candidates}, base)
        widest = max((c.half_width for c in comps.values()), default=None)
        return settled(comps, len(candidates) - 1, target), widest

    def run(self, cells: list[Cell], previous: tuple[Trial, ...], failed: set[int]) -> None:
        """Stand up every configuration `blocks` times at once (each copy a fresh mkfs), then rounds
        over all of them until every comparison is narrow enough or the budget is spent. A resumed
        run keeps the blocks it has and stands up the ones it lacks."""
        m = self.plan.method
        indexes = {c.index for c in cells}
        history = [t for t in previous if t.cell_index in indexes and t.phase == "measured" and t.ok]
        rounds_in: dict[int, set[int]] = {}
        for t in history:
            if t.round is not None:
                rounds_in.setdefault(t.block, set()).add(t.round)
        first = max(rounds_in) + 1 if rounds_in else 0
        minimum = round_budget(m).min_rounds
        # a block counts as done once it had the fewest rounds; a resumed run whose blocks all had
        # them has finished this comparison (it was interrupted later, in another workload)
        done_blocks = {b for b, rounds in rounds_in.items() if len(rounds) >= minimum}
        if done_blocks and len(done_blocks) == len(rounds_in) and (m.slices.blocks is None or len(done_blocks) >= m.slices.blocks):
            return
        if all(c.index in failed for c in cells):
            return
        todo = None if m.slices.blocks is None else max(1, m.slices.blocks - len(done_blocks))
        share = 1.0 if m.slices.blocks is None or todo is None or not done_blocks else todo / m.slices.blocks
        budget = round_budget(m, share)
        started = time.monotonic()
        self.bench.observer.rounds_started(cells[0].workload.label, budget.budget_s, todo, len(cells))
        with ExitStack() as stack:
            members = self.stand_up_blocks(stack, cells, failed, first, todo, len(done_blocks), budget.budget_s)
            # a resumed run numbers its rounds on: its new blocks did not stand in the old rounds
            first_round = max((t.round for t in history if t.round is not None), default=-1) + 1
            self._rounds(cells, members, history, failed, first, first_round, budget, started)

    def _rounds(self, cells: list[Cell], members: list[Member], history: list[Trial], failed: set[int],
                first: int, first_round: int, budget: RoundBudget, started: float) -> None:
        """Rounds over every standing member, in a shuffled order each, until the comparisons settle."""
        label = cells[0].workload.label
        round_no = first_round
        while members:
            t0 = time.monotonic()
            for member in round_order(members, self.seed, first, round_no):
                if member.cell.index in failed:
                    continue
                trial = self.slice_or_fail(member, round_no, members, failed)
                if trial is not None:
                    history.append(trial)
            members = [x for x in members if x.cell.index not in failed]
            round_no += 1
            rounds_done = round_no - first_round
            standing = list({x.cell.index: x.cell for x in members}.values())
            done, widest = self.settled(cells, history, standing, budget.target)
            self.bench.observer.round_finished(label, first, round_no, widest)  # counted as the notes count them
            if not budget.another_round(rounds_done, done, time.monotonic(), started + budget.budget_s,
                                        time.monotonic() - t0):
                break


def is_reference(cell: Cell) -> bool:
    """An upper bound or yardstick, not a candidate: in memory, or the raw device."""
    return fs_type(cell.config.fstype).reference
