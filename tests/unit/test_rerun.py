"""Intervals that hold across reruns: what moves a configuration's level from one run to the next (the plan's
rerun_sd) is in every interval and every decision (stats/weather.py `with_rerun`, stats/decision.py), so that the
spread of reruns' estimates lies within their intervals and an A/A copy is not called different. Checked on the
figures recorded on the reference machine (six quiet reruns of the same question) and on simulated reruns whose
configurations move from run to run."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from scipy import stats as sps

from pickfs.analysis.margin import settle_target
from pickfs.analysis.race import RERUN_DF, Entrant, judge, race_roles
from pickfs.fsfacts import BTRFS_RERUN, NO_FLUSH_RERUN, rerun_floor
from pickfs.model import FsConfig, Method
from pickfs.stats.decision import against_baseline, contrast, decide
from pickfs.stats.weather import Fit, Spread, fit, with_rerun
from tests.unit.test_race import simulate

RERUN_SD = Method().rerun_sd
Z95 = 1.959963984540054

# xfs against ext4 in six quiet reruns (the reference machine; docs/method.md "What moves a comparison between
# runs"): the estimate and the 95% interval each run gave, and how many comparisons that interval was
# simultaneous over (1: the answer's own interval; 5: the table's, Bonferroni over five).
RECORDED = [  # (estimate, low, high, comparisons)
    (1.03, 1.01, 1.05, 1),  # run 1, default job: +3% [+1% to +5%]
    (1.05, 1.00, 1.10, 5),  # run 2, 6-configuration plan
    (1.07, 1.04, 1.09, 5),  # run 3, 6-configuration plan
    (1.03, 1.01, 1.04, 1),  # run 4, default job
    (1.05, 1.03, 1.08, 1),  # run 5, default job
    (1.04, 1.03, 1.06, 1),  # run 6, 3-configuration plan
]
AA_RUN3 = (1.03, 1.004, 1.056, 5)  # the A/A copy run 3 called faster


def _within_se(low: float, high: float, comparisons: int) -> float:
    """A run's own standard error of a log ratio, read back from its interval."""
    z = float(sps.norm.ppf(1 - 0.025 / comparisons))
    return (math.log(high) - math.log(low)) / (2 * z)


def _fit_of(est: float, se: float, sd: float) -> Fit:
    """A two-level fit whose comparison is `est` with the run's own standard error `se`, the term `sd` added as the
    model adds it to every level."""
    half = se * se / 2
    spreads = {name: with_rerun(Spread(level, half, 60.0, 3, 60, None), sd, RERUN_DF)
               for name, level in (("ext4", 0.0), ("other", math.log(est)))}
    return Fit({}, {}, spreads, (), 0.0, 0.0, (), (), {}, True)


def _pairs_outside(sd: float) -> list[tuple[int, int]]:
    out = []
    for (i, a), (j, b) in itertools.combinations(enumerate(RECORDED), 2):
        ca = contrast(_fit_of(a[0], _within_se(*a[1:]), sd), "other", "ext4")
        cb = contrast(_fit_of(b[0], _within_se(*b[1:]), sd), "other", "ext4")
        assert ca is not None and cb is not None
        if abs(ca.est - cb.est) > Z95 * math.hypot(ca.se, cb.se):
            out.append((i + 1, j + 1))
    return out


def test_the_recorded_reruns_lie_within_their_intervals_once_the_rerun_term_is_in_them():
    # each run's own interval: runs 3 and 4 differ by over 3 combined standard errors
    assert (3, 4) in _pairs_outside(0.0)
    # with what moves a level from run to run: every pair of the six within its combined 95% interval
    assert _pairs_outside(RERUN_SD) == []


def test_the_recorded_estimates_spread_no_more_than_their_intervals_allow():
    def q_test(sd: float) -> float:
        cs = [contrast(_fit_of(e, _within_se(lo, hi, k), sd), "other", "ext4") for e, lo, hi, k in RECORDED]
        w = [1 / c.se**2 for c in cs if c is not None]
        ys = [c.est for c in cs if c is not None]
        mu = sum(a * b for a, b in zip(w, ys)) / sum(w)
        q = sum(a * (y - mu) ** 2 for a, y in zip(w, ys))
        return float(sps.chi2.sf(q, len(ys) - 1))

    assert q_test(0.0) < 0.05  # the run's own variance alone: the reruns spread more than it allows
    assert q_test(RERUN_SD) > 0.10  # with the term, their spread is what the intervals say


def test_the_recorded_a_a_copy_is_not_called_different_with_the_rerun_term():
    est, lo, hi, k = AA_RUN3
    se = _within_se(lo, hi, k)
    called = {sd: against_baseline(_fit_of(est, se, sd), "ext4")["other"].significant for sd in (0.0, RERUN_SD)}
    # the table's simultaneous intervals over the run's five comparisons; the same family here
    wide = {sd: _fit_of(est, se, sd) for sd in (0.0, RERUN_SD)}
    for sd, f in wide.items():
        c = contrast(f, "other", "ext4")
        assert c is not None
        lo5, hi5 = c.interval(1 - 0.05 / 5)
        called[sd] = lo5 > 0 or hi5 < 0
    assert called[0.0] and not called[RERUN_SD]


def test_the_term_is_a_floor_more_measuring_does_not_shrink():
    f = _fit_of(1.04, 0.001, RERUN_SD)
    c = contrast(f, "other", "ext4")
    assert c is not None
    assert c.floor == 2 * RERUN_SD**2 and c.se >= math.sqrt(2) * RERUN_SD
    assert c.within == max(c.se**2 - c.floor, 0.0)


def _reruns(seed: int, truth: dict[str, float], tau: float) -> dict[str, list]:
    """One rerun: every configuration's level moved by its own draw of what moves from run to run."""
    rng = random.Random(f"rerun/{seed}")
    moved = {name: eff + rng.gauss(0, tau) for name, eff in truth.items()}
    return simulate(seed, moved, blocks=3, base_copies=2, rounds=16, image_sd=0.005, slice_sd=0.02, drift=0.05)


def test_simulated_reruns_of_an_a_a_copy_are_not_called_different():
    """Runs whose configurations move from one run to the next by RERUN_SD: the run's own intervals call an A/A
    copy different most of the time; with the term in the model, about as rarely as the level says."""
    truth = {"base": 0.0, "copy": 0.0, "xfs": math.log(1.04)}
    called = {0.0: 0, RERUN_SD: 0}
    cover = {0.0: 0, RERUN_SD: 0}
    runs = 60
    for seed in range(runs):
        series = _reruns(seed, truth, RERUN_SD)
        for sd in called:
            f = fit(series, rerun_sd=sd, rerun_df=RERUN_DF)
            assert f is not None
            called[sd] += against_baseline(f, "base")["copy"].significant
            c = contrast(f, "xfs", "base")
            assert c is not None
            lo, hi = c.interval(0.95)
            cover[sd] += lo <= truth["xfs"] <= hi
    assert called[0.0] > 0.1 * runs  # without the term: called different in over a tenth of the reruns
    assert called[RERUN_SD] <= 0.05 * runs + 1  # with it: at most as often as the 95% level allows
    assert cover[RERUN_SD] >= 0.9 * runs > cover[0.0]  # and the intervals hold the truth across reruns


def test_decisions_carry_the_term_too():
    """A contender truly 4% faster at a 5% margin: the run's own interval may settle it within the margin, but
    across reruns it would flip; with the term the race cannot settle it on one run's luck."""
    truth = {"base": 0.0, "xfs": math.log(1.04)}
    settled = {0.0: 0, RERUN_SD: 0}
    for seed in range(30):
        series = _reruns(seed, truth, RERUN_SD)
        for sd in settled:
            f = fit(series, rerun_sd=sd, rerun_df=RERUN_DF)
            assert f is not None
            settled[sd] += decide(f, ["base", "xfs"], [], "base", 0.05).settled
    assert settled[RERUN_SD] < settled[0.0]


# --- a run-to-run term per configuration kind (fsfacts `rerun_floor`) ------------------------------------------


def _entrant(name: str, fstype: str, mount: tuple[str, ...] = (), index: int = 0) -> Entrant:
    return Entrant(FsConfig(name, fstype, mount_options=mount), index, bool(mount), False, False)


def test_a_kind_that_moves_more_from_run_to_run_carries_its_own_term():
    assert rerun_floor("btrfs", ()) == BTRFS_RERUN
    assert rerun_floor("ext4", ("nobarrier",)) == NO_FLUSH_RERUN
    assert rerun_floor("ext4", ("barrier=0", "noatime")) == NO_FLUSH_RERUN
    assert rerun_floor("btrfs", ("nobarrier",)) == BTRFS_RERUN  # the larger of the two
    assert rerun_floor("ext4", ()) is None and rerun_floor("xfs", ("noatime",)) is None
    assert BTRFS_RERUN.sd > NO_FLUSH_RERUN.sd > RERUN_SD


def test_the_judge_puts_each_kinds_term_in_its_level_and_both_in_a_comparison():
    r = race_roles([_entrant("ext4", "ext4"), _entrant("ext4-aa", "ext4", index=1), _entrant("btrfs", "btrfs", index=2),
                    _entrant("ext4-nobarrier", "ext4", ("nobarrier",), 3)], "ext4")
    truth = {"base": 0.0, "ext4-aa": 0.0, "btrfs": math.log(0.33), "ext4-nobarrier": math.log(1.8)}
    series = simulate(3, truth, blocks=3, base_copies=2, rounds=12, image_sd=0.005, slice_sd=0.02, drift=0.05)
    series["ext4"] = series.pop("base")
    judged = judge(series, r, Method())
    assert judged is not None
    f, _ = judged
    assert f.spreads["btrfs"].rerun_var == pytest.approx(BTRFS_RERUN.sd**2)
    assert f.spreads["ext4-nobarrier"].rerun_var == pytest.approx(NO_FLUSH_RERUN.sd**2)
    # the A/A copy is of the baseline's kind: the plan's term, each level its own
    assert f.spreads["ext4-aa"].rerun_var == f.spreads["ext4"].rerun_var == pytest.approx(RERUN_SD**2)
    c = contrast(f, "btrfs", "ext4")
    assert c is not None and c.floor == pytest.approx(BTRFS_RERUN.sd**2 + RERUN_SD**2)
    # a plan that carries no run-to-run term carries none by kind either
    judged0 = judge(series, r, Method(rerun_sd=0.0))
    assert judged0 is not None and all(s.rerun_var == 0 for s in judged0[0].spreads.values())


def test_a_non_candidate_whose_kind_moves_more_than_the_target_is_still_decided():
    """ext4-nobarrier's run-to-run term alone puts its 95% interval wider than the 10% a non-candidate's factor
    must be known within: the target is on what measuring narrows, else it would stay pending (and the race
    would run, or stop as unable to settle, on its account)."""
    r = race_roles([_entrant("ext4", "ext4"), _entrant("ext4-nobarrier", "ext4", ("nobarrier",), 1)], "ext4")
    series = simulate(5, {"base": 0.0, "ext4-nobarrier": math.log(1.8)}, blocks=3, base_copies=2, rounds=30,
                      image_sd=0.002, slice_sd=0.01, drift=0.02)
    series["ext4"] = series.pop("base")
    judged = judge(series, r, Method())
    assert judged is not None
    f, decision = judged
    c = contrast(f, "ext4-nobarrier", "ext4")
    assert c is not None
    lo, hi = c.interval(0.95)
    assert (hi - lo) / 2 > math.log1p(0.10)  # its whole interval is wider than the target
    assert "ext4-nobarrier" not in decision.pending
    assert decision.done
    why = dict(decision.decided)["ext4-nobarrier"]
    assert "as far as measuring narrows it" in why
    assert settle_target("ext4-nobarrier", c, 0.10, 60.0, 0.05) is None


# --- an A/A copy is a check, not a contender ----------------------------------------------------------------------


def test_a_copy_of_a_configuration_is_no_candidate_and_knows_its_original():
    r = race_roles([_entrant("ext4", "ext4"), _entrant("ext4-aa", "ext4", index=1), _entrant("xfs", "xfs", index=2)],
                   "ext4")
    assert r.candidates == ("ext4", "xfs")
    assert "ext4-aa" in r.others and r.copy_of("ext4-aa") == "ext4" and r.copy_of("xfs") is None
    # the baseline is the original, whatever the plan's order
    r2 = race_roles([_entrant("ext4-aa", "ext4"), _entrant("ext4", "ext4", index=1), _entrant("xfs", "xfs", index=2)],
                    "ext4")
    assert r2.candidates == ("ext4", "xfs") and r2.copy_of("ext4-aa") == "ext4"


def test_copies_are_the_same_setup_under_another_name():
    from pickfs.stats.decision import copies

    a = FsConfig("a", "ext4", mount_options=("noatime", "nodiratime"))
    b = FsConfig("b", "ext4", mount_options=("nodiratime", "noatime"), description="again")
    c = FsConfig("c", "ext4", mount_options=("noatime",))
    d = FsConfig("d", "ext4", mount_options=("noatime", "nodiratime"), age=0.5)
    e = FsConfig("e", "xfs", mount_options=("noatime", "nodiratime"))
    assert copies([a, b, c, d, e]) == {"b": "a"}
    assert copies([a, b, FsConfig("b2", "ext4", mount_options=("noatime", "nodiratime"))], "b") == {"a": "b", "b2": "b"}


def test_the_race_lets_a_copy_go_once_its_factor_is_known_and_decides_on_the_original():
    """The A/A plan's copy was a second contender (xfs had to beat ext4 and its copy by the margin); as a check it is
    decided like any non-candidate, and the decision weighs the original alone."""
    r = race_roles([_entrant("ext4", "ext4"), _entrant("ext4-aa", "ext4", index=1), _entrant("xfs", "xfs", index=2)],
                   "ext4")
    series = simulate(11, {"base": 0.0, "ext4-aa": 0.0, "xfs": math.log(1.12)}, blocks=3, base_copies=2, rounds=8,
                      image_sd=0.01, slice_sd=0.03, drift=0.05)
    series["ext4"] = series.pop("base")
    judged = judge(series, r, Method())
    assert judged is not None
    _, decision = judged
    assert "ext4-aa" not in decision.tied and "ext4-aa" not in dict(decision.out)
    assert "ext4-aa" in dict(decision.decided) or "ext4-aa" in decision.pending


def test_the_engines_race_takes_a_copy_as_a_check_as_the_analysis_does():
    from pickfs.engine.race import roles
    from pickfs.model import Cell, WorkloadSpec

    wl = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb")
    configs = [FsConfig("ext4", "ext4"), FsConfig("ext4-aa", "ext4", description="again"), FsConfig("xfs", "xfs")]
    cells = [Cell(i, c, wl) for i, c in enumerate(configs)]
    r = roles(cells, "ext4", set())
    assert r.candidates == ("ext4", "xfs") and r.copies == (("ext4-aa", "ext4"),)
    # its original failed: the copy stands for the setup
    assert roles(cells, "ext4", {0}).candidates == ("ext4-aa", "xfs")
