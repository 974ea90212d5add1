"""Power-cut states from a recorded log, and what each lost (pure).

The model is a worst-case disk with a volatile write cache: at a power cut, every write before
the last completed flush is on the platter (a FUA write reaches the recorder as a write and a
flush, so it is durable once it completes); of the writes after it, any subset of atomic units
(4 KiB by default, a setting) may have reached the platter, in any order, so one write can be
torn. A drive with power-loss protection does better than this. Everything written before the
workload started is taken as safely on disk.

Which subsets are tried is a stated strategy (REGISTRY, one Strategy object each): the tearing and reordering ones in turn at
the moments before a burst's flush, the others first at the moments spread evenly;
the moments are spread over the whole run: at random (one drawn uniformly in each of equal stretches
of its time: these states are the sample a crash test's bound counts), just before the flushes that end
the largest bursts of writes, and around events the workload reported (checkpoints, WAL switches, files
created, renamed or removed).
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pickfs.crash.log import FLUSH, WRITE, ZERO, Piece, Record

DEFAULT_UNIT = 4096
Keeper = Callable[[Sequence[int], Mapping[int, list[Piece]], random.Random], list[Piece]]


@dataclass(frozen=True)
class Strategy:
    """How the writes after the last flush fare in a power-cut state: which of their units land.

    `at_bursts` and `spread` are its turn among the strategies tried at the moments just before a
    burst's flush (a checkpoint's write-back: where tearing and reordering matter) and at the moments
    spread evenly; None: not tried there unless the chosen strategies leave that kind of moment none.
    """

    name: str
    text: str  # what lands, in words (the crash model's statement lists it)
    keep: Keeper  # (the unflushed changes, each one's units, rng) -> the units that land
    at_bursts: int | None = None
    spread: int | None = None
    tears: bool = False  # can land part of one write
    reorders: bool = False  # can land a later write without an earlier one


def _lost(changes: Sequence[int], per: Mapping[int, list[Piece]], rng: random.Random) -> list[Piece]:
    return []


def _kept(changes: Sequence[int], per: Mapping[int, list[Piece]], rng: random.Random) -> list[Piece]:
    return [p for i in changes for p in per[i]]


def _random_subset(changes: Sequence[int], per: Mapping[int, list[Piece]], rng: random.Random) -> list[Piece]:
    return [p for i in changes for p in per[i] if rng.random() < 0.5]


def _newest_dropped(changes: Sequence[int], per: Mapping[int, list[Piece]], rng: random.Random) -> list[Piece]:
    return [p for i in changes[:-1] for p in per[i]]


def _one_dropped(changes: Sequence[int], per: Mapping[int, list[Piece]], rng: random.Random) -> list[Piece]:
    gone = rng.choice(changes) if changes else -1
    return [p for i in changes if i != gone for p in per[i]]


def _torn(changes: Sequence[int], per: Mapping[int, list[Piece]], rng: random.Random) -> list[Piece]:
    kept: list[Piece] = []
    for i in changes:
        parts = per[i]
        landed = set(rng.sample(range(len(parts)), rng.randint(1, len(parts) - 1))) if len(parts) > 1 else {0}
        kept += [p for k, p in enumerate(parts) if k in landed]
    return kept


# Every strategy, in the order they are named; register one more with register_strategy().
REGISTRY: dict[str, Strategy] = {}


def register_strategy(strategy: Strategy) -> Strategy:
    """Add a strategy to the registry (its name must be new); returns it."""
    if strategy.name in REGISTRY or strategy.name == "all":
        raise ValueError(f"crash strategy {strategy.name!r} is already registered")
    REGISTRY[strategy.name] = strategy
    return strategy


for _s in (
    Strategy("unflushed lost", "every unflushed write lost", _lost, spread=0),
    Strategy("random subset", "a random subset of the unflushed units kept (writes torn and reordered)",
             _random_subset, at_bursts=1, spread=2, tears=True, reorders=True),
    Strategy("newest dropped", "all unflushed writes kept but the newest", _newest_dropped, at_bursts=3),
    Strategy("one write dropped", "all unflushed writes kept but one, chosen in turn", _one_dropped, at_bursts=2,
             reorders=True),
    Strategy("torn writes", "every unflushed write kept, but of each one longer than a unit only some units",
             _torn, at_bursts=0, spread=3, tears=True),
    Strategy("unflushed kept", "every unflushed write kept", _kept, spread=1),
):
    register_strategy(_s)


def strategy_names() -> tuple[str, ...]:
    """Every registered strategy's name, in registration order."""
    return tuple(REGISTRY)


def turns(names: Sequence[str], at_bursts: bool) -> tuple[str, ...]:
    """The strategies of `names` tried in turn at the moments before bursts (or spread evenly), in their turn."""
    ranked = [(turn, n) for n in names if (turn := (REGISTRY[n].at_bursts if at_bursts else REGISTRY[n].spread))
              is not None]
    return tuple(n for _, n in sorted(ranked))


# The built-in strategies' names (strategy_names() also has those registered later).
STRATEGIES = strategy_names()


@dataclass(frozen=True)
class Event:
    """Something the workload did at a known moment: a checkpoint, a WAL switch, a file created or renamed."""

    t_ns: int
    what: str
    kind: str = "write-back"  # write-back: the database was asked to write its pages (a checkpoint); file: a file event


@dataclass(frozen=True)
class CrashState:
    index: int
    cut: int  # records [0, cut) reached the recorder before the power failed
    durable: int  # records [0, durable) are on stable storage (up to the last flush before the cut)
    kept: tuple[Piece, ...]  # units of the unflushed changes in [durable, cut) that reached the disk
    dropped: int  # unflushed units that did not
    t_ns: int  # the latest moment of the power cut (before the next record arrived): later acks do not count
    mode: str
    units: int = 0  # unflushed units in all
    torn: int = 0  # unflushed writes of which some units landed and some did not
    recovery: bool = False  # power fails again while this state recovers, and recovery is run again
    why: str = ""  # how the moment was chosen: at random, before a large flush, near an event
    drawn: bool = False  # the moment was drawn at random (the sample); else chosen where damage is likeliest

    def applied(self, start: int) -> list[Piece]:
        """Pieces to apply on top of the state at `start`, in order."""
        return [*(Piece(i) for i in range(start, self.durable)), *self.kept]


def window(records: Sequence[Record], t_start: int, t_end: int) -> tuple[int, int]:
    """[first, last) indexes of the records that arrived while the workload ran."""
    first = next((i for i, r in enumerate(records) if r.t_ns > t_start), len(records))
    last = next((i for i in range(len(records) - 1, -1, -1) if records[i].t_ns <= t_end), -1) + 1
    return first, max(first, last)


def units_of(records: Sequence[Record], index: int, unit: int) -> list[Piece]:
    """A change split into the disk's atomic units, aligned on the image's offsets (a truncation is one)."""
    r = records[index]
    if r.kind not in (WRITE, ZERO) or r.length == 0:
        return [Piece(index)]
    out = []
    pos, end = r.offset, r.offset + r.length
    while pos < end:
        nxt = min(end, (pos // unit + 1) * unit)
        out.append(Piece(index, pos - r.offset, nxt - pos))
        pos = nxt
    return out if len(out) > 1 else [Piece(index)]


def last_flush(records: Sequence[Record], first: int, cut: int) -> int:
    """The index after the last flush in [first, cut), or `first` when there is none."""
    for i in range(cut - 1, first - 1, -1):
        if records[i].kind == FLUSH:
            return i + 1
    return first


def choose(records: Sequence[Record], durable: int, cut: int, mode: str, unit: int,
           rng: random.Random) -> tuple[tuple[Piece, ...], int, int, int]:
    """The units of the unflushed changes in [durable, cut) that land under `mode`: (kept, dropped, units, torn)."""
    changes = [i for i in range(durable, cut) if records[i].changes]
    per = {i: units_of(records, i, unit) for i in changes}
    every = [p for i in changes for p in per[i]]
    strategy = REGISTRY.get(mode)
    if strategy is None:
        raise ValueError(f"unknown crash strategy {mode!r}")
    kept = strategy.keep(changes, per, rng)
    keptset = set(kept)
    torn = sum(1 for i in changes if 0 < sum(1 for p in per[i] if p in keptset) < len(per[i]))
    return tuple(kept), len(every) - len(kept), len(every), torn


def cut_points(first: int, last: int, n: int) -> list[int]:
    """Up to n cut points spread evenly over the records of the window (a cut after record i is i + 1)."""
    span = last - first
    if span <= 0:
        return [first] if n > 0 else []
    return sorted({first + max(1, round(span * (k + 1) / n)) for k in range(n)})


def _moment(records: Sequence[Record], cut: int, t_end: int) -> int:
    return min(records[cut].t_ns - 1, t_end) if cut < len(records) else t_end


def exposed_flushes(records: Sequence[Record], first: int, last: int, unit: int = DEFAULT_UNIT) -> list[int]:
    """Flushes in [first, last), the one ending the most exposed burst first (cut just before each).

    A burst's exposure is, first, how many units it overwrites that were last written before the
    previous flush (a torn overwrite leaves a page half old, half new: what torn-page protections
    are for; a log page rewritten at every commit is not counted), then its bytes.
    """
    seq = 0
    last_seq: dict[int, int] = {}
    for r in records[:first]:
        if r.kind == FLUSH:
            seq += 1
        elif r.kind in (WRITE, ZERO) and r.length:
            last_seq.update(dict.fromkeys(range(r.offset // unit, (r.offset + r.length - 1) // unit + 1), seq))
    out, over, since = [], 0, 0
    for i in range(first, last):
        r = records[i]
        if r.kind == FLUSH:
            if since:
                out.append((over, since, i))
            seq += 1
            over, since = 0, 0
        elif r.kind in (WRITE, ZERO) and r.length:
            for u in range(r.offset // unit, (r.offset + r.length - 1) // unit + 1):
                before = last_seq.get(u)
                if before is not None and before < seq - 1:
                    over += 1
                last_seq[u] = seq
            since += r.length
    return [i for _, _, i in sorted(out, key=lambda x: (-x[0], -x[1], x[2]))]


@dataclass(frozen=True)
class Epoch:
    """A flush epoch of the recording with unflushed writes: the records from `start` (after the previous flush)
    up to `cut` (its flush, or the end of the window), and what a torn write in it can break."""

    start: int
    cut: int  # a power cut just before the epoch's flush: every write of the epoch unflushed
    exposed: int  # units it overwrites that were last written before the previous flush
    overwrites: tuple[int, ...]  # its multi-unit writes that overwrite units written earlier
    size: int  # bytes written

    @property
    def priority(self) -> tuple[int, int, int, int]:
        """Its place in the order targeted states cover epochs (smallest first): the most exposed, then the most
        overwriting multi-unit writes, then the most bytes, then the earliest."""
        return (-self.exposed, -len(self.overwrites), -self.size, self.start)


def _span(r: Record, unit: int) -> range:
    return range(r.offset // unit, (r.offset + r.length - 1) // unit + 1)


def epochs(records: Sequence[Record], first: int, last: int, unit: int = DEFAULT_UNIT) -> list[Epoch]:
    """The flush epochs with unflushed writes in the window [first, last), in the order targeted states cover them
    (Epoch.priority); the last one may end at the window's end, not at a flush (pure)."""
    seq = 0
    last_seq: dict[int, int] = {}  # unit -> the flush epoch that last wrote it
    for r in records[:first]:
        if r.kind == FLUSH:
            seq += 1
        elif r.kind in (WRITE, ZERO) and r.length:
            last_seq.update(dict.fromkeys(_span(r, unit), seq))
    out: list[Epoch] = []
    start, changed, exposed, size = first, False, 0, 0
    over: list[int] = []
    for i in range(first, last + 1):
        now = records[i] if i < last else None
        if now is None or now.kind == FLUSH:
            if changed:
                out.append(Epoch(start, i, exposed, tuple(over), size))
            seq += 1
            start, changed, exposed, size, over = i + 1, False, 0, 0, []
        elif now.changes:
            changed = True
            if now.kind in (WRITE, ZERO) and now.length:
                span = _span(now, unit)
                if len(span) > 1 and any(u in last_seq for u in span):
                    over.append(i)
                for u in span:
                    before = last_seq.get(u)
                    if before is not None and before < seq - 1:
                        exposed += 1
                    last_seq[u] = seq
                size += now.length
    return sorted(out, key=lambda e: e.priority)


@dataclass(frozen=True)
class Done:
    """What earlier batches of states covered: the flush epochs cut in (by their start) and the overwriting
    multi-unit writes torn (by their record); the next batch's targeted states go to the rest first."""

    epochs: frozenset[int] = frozenset()
    torn: frozenset[int] = frozenset()


AT_RANDOM = "at a random moment of the run"


FIRST_DRAWN = 1 / 3  # of a first batch of states, the share drawn at random (the others targeted, half and half)
# Of each later batch of a budget, the share drawn at random: the bound counts only these (448 distinct ones with
# none lost rule out 1 in 150), while a recording's flush epochs are thousands (one per commit), too many to cover
# one by one in a budget; the targeted fifth goes on down the priority order, whose head (the write-backs
# overwriting the most) the first batches cover.
LATER_DRAWN = 4 / 5


def crash_moments(records: Sequence[Record], t_start: int, t_end: int, n: int,
                  events: Sequence[Event] = (), unit: int = DEFAULT_UNIT, seed: int = 1,
                  done: Done = Done(), drawn: float = FIRST_DRAWN) -> list[tuple[int, int, str]]:
    """n (cut, latest moment, why) triples over the whole run.

    A share `drawn` of them (rounded up) at random over the run's time (one moment drawn uniformly in each of
    equal stretches, kept even where another moment is the same: they are the sample); the rest targeted, in
    turn: just before the flush of the next flush epoch in the priority order (`epochs`) that no earlier batch
    covered (`done`; once all are covered, from the first again), and just before the most exposed flush after
    each event the workload reported, in an epoch not covered yet where there is one; when one
    kind runs out the other fills in, then moments evenly over the window's records. A window with few
    records is then filled over its time (a database that never wrote while acknowledging commits gets n
    moments on the same image).
    """
    first, last = window(records, t_start, t_end)
    share = min(n, math.ceil(n * drawn - 1e-9))  # the moments drawn at random
    aimed = n - share  # the targeted ones: before bursts, and after events (at most half, rounded up)
    times = [r.t_ns for r in records]
    # evenly over the run's time, not its records: writes crowd into write-back bursts, while commits that a lazy
    # log flush leaves in memory are lost between them
    even = []
    draw = random.Random(seed * 104729 + 17)
    for j in range(share):
        t = t_start + (t_end - t_start) * j // share + draw.randrange(max(1, (t_end - t_start) // share))
        c = min(last, max(first, bisect.bisect_right(times, t)))
        even.append((c, _moment(records, c, t_end), AT_RANDOM))
    more = [(c, _moment(records, c, t_end), "evenly over the run") for c in cut_points(first, last, n)]
    ordered = epochs(records, first, last, unit)
    fresh = [e for e in ordered if e.start not in done.epochs] or ordered  # all covered: round again
    fresh_starts = {e.start for e in fresh}
    bursts = [(e.cut, _moment(records, e.cut, t_end), "before the flush ending a burst that overwrites the most")
              for e in fresh]
    def spread(items: list[tuple[int, int, str]], k: int) -> list[tuple[int, int, str]]:
        if len(items) <= k:
            return items
        return [items[round(j * (len(items) - 1) / (k - 1))] for j in range(k)] if k > 1 else items[:1]

    inside = [e for e in events if t_start <= e.t_ns <= t_end]
    by_kind: list[tuple[str, tuple[int, int, str]]] = []
    for k, e in enumerate(inside):
        at = max(first, bisect.bisect_right(times, e.t_ns))
        until = min(last, bisect.bisect_right(times, inside[k + 1].t_ns) if k + 1 < len(inside) else last)
        # the most exposed flush before the next event (a checkpoint's write-back), else the first
        flush = next((f for f in exposed_flushes(records, at, until, unit)
                      if last_flush(records, first, f) in fresh_starts), None)
        if flush is None:
            flush = next((i for i in range(at, last + 1) if (i == last or records[i].kind == FLUSH)
                          and last_flush(records, first, i) in fresh_starts), None)
        if flush is None:  # every epoch after it covered by an earlier batch
            continue
        by_kind.append((e.kind, (flush, _moment(records, flush, t_end), f"before the most exposed flush after {e.what}")))
    # the database's own write-backs first (they are what torn-page protections guard), then file events
    near = [m for kind in ("write-back", "file") for m in spread([m for k, m in by_kind if k == kind],
                                                                 -(-aimed // 2))]
    out, seen = _in_turn(even, ([bursts, near], [more]), n, aimed)
    k = 0
    while len(out) < n and k < n:
        k += 1
        moment = t_start + (t_end - t_start) * k // n
        cut = max(first, bisect.bisect_right(times, moment))
        if (cut, moment) not in seen:
            seen.add((cut, moment))
            out.append((cut, moment, "evenly over the run's time"))
    return sorted(out, key=lambda cm: (cm[1], cm[0]))[:n]


Moment = tuple[int, int, str]  # (cut, latest moment, why)


def _in_turn(drawn: list[Moment], groups: tuple[list[list[Moment]], ...], n: int,
             aimed: int) -> tuple[list[Moment], set[tuple[int, int]]]:
    """Up to n moments taken in turn from the queues: the drawn ones and each group's targeted ones, at most `aimed`
    of these, one group after the other (the next fills what the one before lacks); with what was taken (pure)."""
    out: list[Moment] = []
    seen: set[tuple[int, int]] = set()
    for group in groups:
        queues = [drawn, *group]
        while len(out) < n and any(queues):
            for q in queues:
                while q and len(out) < n:
                    if q is not drawn and aimed <= 0:
                        q.clear()  # the targeted moments are all there: the rest are drawn
                        break
                    c, m, why = q.pop(0)
                    if (c, m) not in seen or q is drawn:  # a moment drawn at random stays in the sample
                        seen.add((c, m))
                        out.append((c, m, why))
                        if q is not drawn:
                            aimed -= 1
                        break
    return out, seen


def generate(records: Sequence[Record], t_start: int, t_end: int, n: int, seed: int = 1, unit: int = DEFAULT_UNIT,
             events: Sequence[Event] = (), recovery_share: float = 0.0,
             strategies: Sequence[str] = (), done: Done = Done(), drawn: float = FIRST_DRAWN) -> list[CrashState]:
    """n power-cut states over the workload's window, each moment with a strategy (its turn at bursts or spread).

    `strategies`: the names to try (empty: every registered one). `recovery_share` of the states (spread
    evenly) also crash again while recovering. `done`: what earlier batches covered (their targeted moments go to
    the epochs not covered yet); `drawn`: the share of the moments drawn at random (`crash_moments`). A targeted state cut in an epoch holding a multi-unit write that overwrites
    earlier data and that no state tore yet tears it: the first tearing strategy of those tried at bursts.
    """
    first, last = window(records, t_start, t_end)
    untorn = {e.start: set(e.overwrites) - done.torn for e in epochs(records, first, last, unit)}
    rng = random.Random(seed)
    every = round(1 / recovery_share) if recovery_share > 0 else 0
    states: list[CrashState] = []
    strategies = tuple(strategies) or strategy_names()
    at_bursts = turns(strategies, at_bursts=True) or strategies
    spread = turns(strategies, at_bursts=False) or strategies
    turn = dict.fromkeys((at_bursts, spread), 0)
    tearer = next((name for name in at_bursts if REGISTRY[name].tears), None)
    for k, (cut, t_ns, why) in enumerate(crash_moments(records, t_start, t_end, n, events, unit, seed, done,
                                                               drawn)):
        durable = last_flush(records, first, cut)
        drawn = why == AT_RANDOM
        cycle = spread if drawn or why.startswith("evenly") else at_bursts
        if cycle is at_bursts and tearer is not None and untorn.get(durable) and cut == _epoch_end(records, durable,
                                                                                                   last):
            mode = tearer  # its overwriting writes torn first; the turn of the others waits
            untorn[durable] = set()
        else:
            mode = cycle[turn[cycle] % len(cycle)]
            turn[cycle] += 1
        kept, dropped, units, torn = choose(records, durable, cut, mode, unit, rng)
        recovery = bool(every) and k % every == every - 1
        states.append(CrashState(len(states), cut, durable, kept, dropped, t_ns, mode, units, torn, recovery, why,
                                 drawn))
    return states


def one_image(records: Sequence[Record], first: int, last: int) -> bool:
    """Whether every power cut in the window [first, last) leaves the same disk: no write, discard or truncation
    reached it while the workload ran (a database that acknowledged commits from memory only) (pure)."""
    return not any(r.changes for r in records[first:last])


def _epoch_end(records: Sequence[Record], start: int, last: int) -> int:
    """The index of the flush that ends the epoch beginning at `start`, or `last` (pure)."""
    return next((i for i in range(start, last) if records[i].kind == FLUSH), last)


def recovery_crash(records: Sequence[Record], unit: int, rng: random.Random) -> tuple[int, tuple[Piece, ...], int]:
    """A second power cut somewhere in a recovery's own writes: (cut, pieces that land, units lost).

    The cut falls on a random record; everything up to the last flush before it lands, and a
    random subset of the units written after that flush.
    """
    if not records:
        return 0, (), 0
    cut = rng.randint(1, len(records))
    durable = last_flush(records, 0, cut)
    kept, dropped, _, _ = choose(records, durable, cut, "random subset", unit, rng)
    return cut, (*(Piece(i) for i in range(durable)), *kept), dropped


def when(t_ns: int, t_start: int, events: Sequence[Event]) -> str:
    """When in the run a power cut fell: seconds into the workload, and the latest event before it (pure)."""
    at = f"{(t_ns - t_start) / 1e9:.2f} s into the run"
    before = [e for e in events if e.t_ns <= t_ns]
    if not before:
        return at
    e = max(before, key=lambda x: x.t_ns)
    return f"{at}, {(t_ns - e.t_ns) / 1e9:.2f} s after {e.what}"


@dataclass(frozen=True)
class Loss:
    lost: tuple[int, ...]  # acknowledged commits missing after recovery
    seconds: float  # work lost: from the oldest lost acknowledgement to the power cut


def losses(acks: Mapping[int, int], present: set[int], t_cut: int) -> Loss:
    """Commits acknowledged before the cut that recovery did not bring back."""
    lost = sorted(cid for cid, t in acks.items() if t < t_cut and cid not in present)
    oldest = min((acks[c] for c in lost), default=t_cut)
    return Loss(tuple(lost), (t_cut - oldest) / 1e9)


def parse_acks(text: str) -> dict[int, int]:
    """The client's acknowledgement log: 'commit-id monotonic-ns' per line; a torn last line is ignored."""
    out: dict[int, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            out[int(parts[0])] = int(parts[1])
    return out


def parse_events(text: str) -> list[Event]:
    """An event log: 'monotonic-ns what happened' per line; a torn last line is ignored (pure)."""
    out = []
    for line in text.splitlines():
        t, _, what = line.partition(" ")
        if t.isdigit() and what.strip():
            out.append(Event(int(t), what.strip()))
    return sorted(out, key=lambda e: e.t_ns)


def parse_strategies(text: str) -> tuple[str, ...]:
    """A comma-separated list of strategy names ('' or 'all': every one); ValueError naming the bad one (pure)."""
    names = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    if not names or names == ("all",):
        return strategy_names()
    bad = [x for x in names if x not in REGISTRY]
    if bad:
        raise ValueError(f"unknown crash strategy {bad[0]!r}")
    return names


@dataclass(frozen=True)
class Coverage:
    """What of a recording the states covered: its flush epochs with unflushed writes (a state cut inside one
    covers it), and its multi-unit writes that overwrite units written before (those a torn write can break:
    checkpoint write-back, full-page images, doublewrite), torn by some state."""

    epochs: int
    epochs_covered: int
    overwrites: int
    overwrites_torn: int


def _covered(records: Sequence[Record], every: Sequence[Epoch], states: Sequence[CrashState], unit: int) -> Done:
    starts = {e.start for e in every}
    overwrites = {i for e in every for i in e.overwrites}
    covered = frozenset(s.durable for s in states if s.units and s.durable in starts)
    torn: set[int] = set()
    for s in states:
        landed: dict[int, int] = {}
        for p in s.kept:
            landed[p.record] = landed.get(p.record, 0) + 1
        torn.update(i for i, n in landed.items() if i in overwrites and n < len(units_of(records, i, unit)))
    return Done(covered, frozenset(torn))


def covered(records: Sequence[Record], first: int, last: int, states: Sequence[CrashState], unit: int) -> Done:
    """The flush epochs of the window [first, last) that `states` cut in, and the overwriting multi-unit writes
    they tore (pure)."""
    return _covered(records, epochs(records, first, last, unit), states, unit)


def coverage(records: Sequence[Record], first: int, last: int, states: Sequence[CrashState], unit: int) -> Coverage:
    """The coverage of `states` over the window [first, last) of a recording (pure)."""
    every = epochs(records, first, last, unit)
    done = _covered(records, every, states, unit)
    return Coverage(len(every), len(done.epochs), sum(len(e.overwrites) for e in every), len(done.torn))
