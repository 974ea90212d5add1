"""What a crash test's sample of power cuts rules out (pure functions: no I/O, no printing).

Only the states cut at random moments are a sample: of them, `failed` out of `n` lost or damaged
something. The exact binomial (Clopper-Pearson) bounds say which loss rates per power cut that count is
compatible with, at 95% confidence: with none of n failing, any rate of `upper(0, n)` = 1 - 0.05^(1/n)
or more would have shown a failure with 95% probability. The moments are drawn one at random in each of
n equal stretches of the run, which makes a failure-free sample no likelier than n independent draws
would (the product of the stretches' survival chances is at most that of their mean), so the bound holds.
States chosen where damage is likeliest are coverage: they are not a sample and count in no bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as sps

CONFIDENCE = 0.95


def upper(failed: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided exact upper bound on the failure rate per power cut, `failed` of `n` seen (1.0 for n = 0)."""
    if n <= 0 or failed >= n:
        return 1.0
    if failed == 0:
        return 1.0 - float((1.0 - confidence) ** (1.0 / n))
    return float(sps.beta.ppf(confidence, failed + 1, n - failed))


def lower(failed: int, n: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided exact lower bound on the failure rate per power cut (0.0 when none failed)."""
    if n <= 0 or failed <= 0:
        return 0.0
    if failed >= n:
        return float((1.0 - confidence) ** (1.0 / n))
    return float(sps.beta.ppf(1.0 - confidence, failed, n - failed + 1))


def one_in(rate: float) -> int:
    """The largest K with 1/K at least `rate`: a rate of 1 in K or higher (K rounded down, so never overstated)."""
    if rate <= 0:
        return 0
    return max(1, math.floor(1.0 / rate + 1e-9))


@dataclass(frozen=True)
class Bound:
    """What n states cut at random moments say about the loss rate per power cut, at 95% confidence."""

    n: int  # states cut at random moments
    failed: int  # of them, states that lost or damaged something
    low: float  # the rate is at least this (two-sided 95%: each side 97.5%)
    high: float  # the rate is at most this; with none failed, the one-sided 95% bound

    @property
    def rules_out_one_in(self) -> int:
        """With none failed: a loss in 1 state of this many or more would have shown (0: nothing ruled out)."""
        return one_in(self.high) if self.n and not self.failed else 0

    @property
    def known_within(self) -> float:
        """How many times the upper bound is of the lower: the rate is known within this factor (inf: not known)."""
        return self.high / self.low if self.low > 0 else math.inf


def bound(failed: int, n: int) -> Bound:
    """The bound for `failed` of `n` states cut at random moments."""
    if failed == 0:
        return Bound(n, 0, 0.0, upper(0, n))
    two_sided = (1.0 + CONFIDENCE) / 2
    return Bound(n, failed, lower(failed, n, two_sided), upper(failed, n, two_sided))


def settled(failed: int, n: int, factor: float = 2.0) -> bool:
    """Whether `failed` of `n` states cut at random moments pin the loss rate down within `factor` (the exact
    two-sided 95% interval's upper end at most `factor` times its lower end)."""
    return failed > 0 and bound(failed, n).known_within <= factor
