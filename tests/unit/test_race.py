"""The race's model and decision on synthetic series: a drifting machine, an outlying baseline image,
configurations decided early, and the margin (a true 6% is not equivalent at 5%; no difference is
not called different)."""

import math
import random
import statistics

import pytest

from pickfs.engine.race import baseline_copies, image_limited, rotation
from pickfs.engine.schedule import standing_up_order
from pickfs.fsfacts import facts_of
from pickfs.model import FsConfig
from pickfs.stats.decision import (
    Decision,
    against_baseline,
    contrast,
    decide,
    preference,
    standing_order,
)
from pickfs.stats.paired import Obs, paired_compare_all
from pickfs.stats.weather import fit


def simulate(seed: int, effects: dict[str, float], blocks: int = 3, base_copies: int = 3, rounds: int = 10,
             image_sd: float = 0.04, slice_sd: float = 0.05, drift: float = 0.15, odd_image: float = 0.0,
             stall: tuple[str, float] | None = None) -> dict[str, list[Obs]]:
    """Slices of every image in rounds of a fresh random order, on a machine whose speed wanders
    (a random walk) and drifts down; `odd_image` shifts the baseline's first image."""
    rng = random.Random(seed)
    images = []
    count: dict[str, int] = {}
    for _ in range(blocks):
        for name, eff in effects.items():
            for _ in range(base_copies if name == "base" else 1):
                j = count.get(name, 0)
                count[name] = j + 1
                shift = odd_image if (name == "base" and j == 0) else 0.0
                images.append((name, j, eff + shift + rng.gauss(0, image_sd)))
    series: dict[str, list[Obs]] = {n: [] for n in effects}
    t, w = 0.0, 0.0
    for r in range(rounds):
        order = images[:]
        rng.shuffle(order)
        for name, j, level in order:
            w = 0.98 * w + rng.gauss(0, drift * 0.2) - 0.002
            y = level + w + rng.gauss(0, slice_sd)
            if stall and stall[0] == name and rng.random() < stall[1]:
                y -= 1.5
            series[name].append(Obs(j, t + 0.5, math.exp(8 + y), r))
            t += 1.0
    return series


def test_a_drifting_machine_is_taken_out_and_the_ratios_are_found():
    truth = {"base": 0.0, "fast": math.log(1.3), "slow": math.log(0.5), "same": 0.0}
    hits = 0
    for seed in range(20):
        f = fit(simulate(seed, truth, drift=0.4))
        for name in ("fast", "slow", "same"):
            c = contrast(f, name, "base")
            lo, hi = c.interval(0.95)
            hits += lo <= truth[name] <= hi
    assert hits >= 0.9 * 60  # 95% intervals hold the truth about 95% of the time


def test_no_difference_is_rarely_called_different():
    """A/A: identical configurations; per comparison p < 0.05 about 5% of the time, and the table's
    simultaneous verdict (which the interval beside it always agrees with) less often."""
    effects = {"base": 0.0, **{f"copy{i}": 0.0 for i in range(5)}}
    raw = called = total = 0
    for seed in range(60):
        comps = against_baseline(fit(simulate(seed, effects)), "base")
        for c in comps.values():
            total += 1
            raw += c.p < 0.05
            called += c.significant
            assert c.significant == (c.ci_low > 1 or c.ci_high < 1)  # one verdict, agreeing with its interval
    assert raw / total <= 0.09 and called / total <= 0.05


def test_an_outlying_baseline_image_is_flagged_kept_and_does_not_move_every_ratio():
    truth = {"base": 0.0, "a": math.log(1.2), "b": math.log(0.8)}
    plain = fit(simulate(3, truth, base_copies=3, slice_sd=0.02, image_sd=0.02))
    odd = fit(simulate(3, truth, base_copies=3, slice_sd=0.02, image_sd=0.02, odd_image=0.3))
    assert ("base", 0) in {(n, b) for n, b, _ in odd.outlying_images}
    assert len(odd.images_of("base")) == 9  # kept, not dropped
    for name in ("a", "b"):
        shift = contrast(odd, name, "base").est - contrast(plain, name, "base").est
        assert abs(shift) < 0.3 / 9 + 0.02  # one image of nine moves the level by a ninth of its gap


def test_the_baseline_replicated_narrows_every_comparison():
    truth = {"base": 0.0, **{f"c{i}": 0.0 for i in range(8)}}
    one = [contrast(fit(simulate(s, truth, base_copies=1)), "c0", "base").se for s in range(15)]
    three = [contrast(fit(simulate(s, truth, base_copies=3)), "c0", "base").se for s in range(15)]
    assert statistics.median(three) < statistics.median(one)


def test_a_stalling_configuration_shows_in_its_own_variance():
    truth = {"base": 0.0, "stalls": 0.0, "calm": 0.0}
    f = fit(simulate(5, truth, stall=("stalls", 0.2)))
    assert f.spreads["stalls"].var > 2 * f.spreads["calm"].var


def _decision(series, candidates, others=(), margin=0.05):
    return decide(fit(series), candidates, others, "base", margin, target=0.10)


def test_a_clearly_slower_configuration_leaves_after_three_rounds():
    s = simulate(1, {"base": 0.0, "xfs": 0.02, "btrfs": math.log(0.4)}, rounds=3)
    d = _decision(s, ["base", "xfs", "btrfs"])
    assert "btrfs" in dict(d.out)
    assert "btrfs" in d.finished and "btrfs" not in rotation(d, _roles())


def test_a_true_six_percent_is_never_called_equivalent_at_five():
    """Preferred 'base' against 'better', truly 6% faster: base is never settled as the answer."""
    wins = 0
    for seed in range(30):
        s = simulate(seed, {"base": 0.0, "better": math.log(1.06)}, blocks=6, rounds=30, image_sd=0.01,
                     slice_sd=0.02, drift=0.05)
        d = _decision(s, ["base", "better"])
        assert not (d.settled and d.answer == "base"), d
        wins += d.settled and d.answer == "better"
    assert wins >= 1  # with enough data the faster one can win outright


def test_no_difference_is_settled_on_the_preferred_one_and_never_drops_it():
    out = settled = 0
    for seed in range(40):
        s = simulate(seed, {"base": 0.0, "same": 0.0}, blocks=4, rounds=20, image_sd=0.01, slice_sd=0.02,
                     drift=0.05)
        d = _decision(s, ["base", "same"])
        out += "base" in dict(d.out)
        settled += d.settled and d.answer == "base"
    assert out <= 2  # wrongly dropped at most ~5% of the time
    assert settled >= 30  # and usually settled: within the margin the preferred one is the answer


def test_undecided_when_the_data_cannot_tell():
    s = simulate(2, {"base": 0.0, "close": math.log(1.04)}, blocks=2, rounds=3, slice_sd=0.2, image_sd=0.1)
    d = _decision(s, ["base", "close"])
    assert not d.settled and d.tied == ("base", "close")


def test_unsafe_configuration_leaves_once_its_factor_is_known():
    s = simulate(4, {"base": 0.0, "nobarrier": math.log(2.0)}, blocks=3, rounds=8, slice_sd=0.02, image_sd=0.01,
                 drift=0.05)
    d = _decision(s, ["base"], others=["nobarrier"])
    assert d.settled and d.answer == "base"
    assert "nobarrier" in dict(d.decided) and not d.pending and d.done


def test_preference_default_then_current_then_plain():
    ext4 = FsConfig("ext4", "ext4")
    xfs = FsConfig("xfs", "xfs")
    ext3 = FsConfig("ext3", "ext3")
    tuned = FsConfig("xfs-tuned", "xfs", mount_options=("logbufs=8",))
    ranks = {c.name: preference(c, facts_of(c.fstype)) for c in (ext4, xfs, ext3, tuned)}
    assert standing_order(["ext3", "xfs-tuned", "xfs", "ext4"], ranks) == ["ext4", "xfs", "xfs-tuned", "ext3"]


def test_baseline_copies_follow_the_square_root_rule():
    assert [baseline_copies(k) for k in (1, 3, 4, 11, 16)] == [1, 2, 2, 3, 4]
    assert baseline_copies(11, given=1) == 1


def test_a_new_image_is_wanted_when_images_differ_more_than_slices():
    wide = fit(simulate(0, {"base": 0.0, "a": 0.0}, image_sd=0.10, slice_sd=0.01, drift=0.01))
    tight = fit(simulate(0, {"base": 0.0, "a": 0.0}, image_sd=0.0, slice_sd=0.10, drift=0.01))
    assert image_limited(wide, 10) and not image_limited(tight, 10)


def test_the_race_narrows_where_the_earlier_estimator_is_moved_by_one_baseline_image():
    """The earlier estimator with one baseline image per block, one of them outlying, against the race's."""
    truth = {"base": 0.0, **{f"c{i}": 0.0 for i in range(5)}}
    old_w, new_w = [], []
    for seed in range(10):
        one = simulate(seed, truth, base_copies=1, odd_image=0.12)
        old = paired_compare_all(one, "base")
        old_w += [c.half_width for c in old.values()]
        three = simulate(seed, truth, base_copies=3, odd_image=0.12)
        f = fit(three)
        for name in truth:
            if name != "base":
                lo, hi = contrast(f, name, "base").interval(0.95)
                new_w.append(math.expm1((hi - lo) / 2))
    assert statistics.median(new_w) < statistics.median(old_w)


def _roles():
    from pickfs.engine.race import Roles

    return Roles(("base", "xfs", "btrfs"), (), "base", frozenset(), frozenset())


@pytest.mark.parametrize("pending", [(), ("nobarrier",)])
def test_the_rotation_keeps_the_tied_and_the_pending_with_the_baseline(pending):
    d = Decision(False, "xfs", ("ext3",), (("btrfs", "slower"),), (), pending, 0.05)
    keep = rotation(d, _roles())
    assert {"xfs", "ext3"} <= keep and "btrfs" not in keep
    assert ("base" in keep) == bool(pending)


def test_a_block_is_stood_up_in_a_shuffled_order_with_the_baseline_copies_spread_through_it():
    names = ["ext4+defaults", *(f"c{i}" for i in range(30))]
    order = standing_up_order(names, {"ext4+defaults": 5}, seed=1, block=0)
    assert sorted(set(order)) == sorted(names) and len(order) == 35 and order.count("ext4+defaults") == 5
    at = [i for i, n in enumerate(order) if n == "ext4+defaults"]
    assert at[0] > 0 and at[-1] < 34 and all(5 <= b - a <= 9 for a, b in zip(at, at[1:], strict=False))
    others = [n for n in order if n != "ext4+defaults"]
    assert others != names[1:]  # not made in the plan's order, where a filesystem's settings stand together
    assert order == standing_up_order(names, {"ext4+defaults": 5}, seed=1, block=0)  # reproducible
    assert order != standing_up_order(names, {"ext4+defaults": 5}, seed=1, block=1)  # a new order each block


def test_the_race_and_the_final_answer_order_candidates_by_one_rule():
    """One candidate order (analysis/race.py): the distribution's default, a current format, fewest settings, the
    plan's order; the final answer puts a clean crash test first, which the race, running before any crash test,
    never knows; an unsafe setting or a reference is never a candidate."""
    from pickfs.analysis.race import Entrant, race_roles

    ext3, xfs, ext4 = FsConfig("ext3", "ext3"), FsConfig("xfs", "xfs"), FsConfig("ext4", "ext4")
    nobarrier, tmpfs = FsConfig("nb", "ext4", mount_options=("nobarrier",)), FsConfig("tmpfs", "tmpfs")
    entrants = [Entrant(ext3, 0, False, False, False), Entrant(xfs, 1, False, False, False, crash_clean=True),
                Entrant(ext4, 2, False, False, False), Entrant(nobarrier, 3, True, False, False),
                Entrant(tmpfs, 4, False, True, True)]
    r = race_roles(entrants, "ext4")
    assert r.candidates == ("xfs", "ext4", "ext3") and r.others == ("nb", "tmpfs")
    assert r.baseline == "ext4" and r.references == {"tmpfs"} and r.in_memory == {"tmpfs"}
    while_racing = race_roles([Entrant(e.config, e.index, e.unsafe, e.reference, e.in_memory) for e in entrants],
                              "missing")
    assert while_racing.candidates == ("ext4", "xfs", "ext3") and while_racing.baseline == "ext3"
