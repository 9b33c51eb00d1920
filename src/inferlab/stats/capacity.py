"""Capacity at SLO: the highest closed-loop concurrency, or open-loop request rate, at which
an SLO holds.

Pure rules over probed points, by their integer index on a ladder (concurrency itself, or
rate / step; ``campaign.parts.capacity`` maps and measures them):
- ``next_probe``: bracketing (doubling from the start until a point fails with confidence),
  then bisection over the integers between the highest point that holds with confidence and
  the lowest that fails with confidence; an undecided point narrows nothing, so its unprobed
  neighbours are probed next, nearest the middle first.
- ``bracket``: the capacity interval that the verdicts give, ``[holds_at, fails_at − 1]``.
- ``isotonic_capacity``: the denoised estimate. Each probe's *margin* is its largest
  percentile/limit ratio (≤ 1: within the SLO); an increasing isotonic fit of the margins
  over concurrency (``scipy.optimize.isotonic_regression``, weighted by requests), linearly
  interpolated, crosses 1 at the estimate; its interval is the percentile interval of that
  crossing over bootstrap replicates of every probe's margin (requests resampled, from the
  raw samples), each refitted. (AIPerf's ``smooth_isotonic`` fits one curve to one sample per
  point; this one resamples each point's requests.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from inferlab.stats.slo import SloState
from inferlab.stats.summary import Interval

__all__ = [
    "Bracket",
    "CapacityRatio",
    "CapacityValue",
    "MarginSample",
    "bracket",
    "compare_capacity",
    "crossing",
    "isotonic_capacity",
    "next_probe",
]


@dataclass(frozen=True)
class Bracket:
    """What the verdicts say: the SLO holds with confidence at ``holds_at`` (0: at no probed
    point) and fails with confidence at ``fails_at`` (None: at none up to the top probed); the
    capacity is in ``[low, high]`` (``high`` None: at least ``low``)."""

    holds_at: int
    fails_at: int | None

    @property
    def low(self) -> int:
        return self.holds_at

    @property
    def high(self) -> int | None:
        return None if self.fails_at is None else self.fails_at - 1


def bracket(states: Mapping[int, SloState]) -> Bracket:
    """The lowest concurrency that fails with confidence, and the highest below it that holds
    (a point that holds above a failing one is left out: noise, or a non-monotone engine)."""
    fails = [c for c, s in states.items() if s == "fails"]
    top = min(fails) if fails else None
    holds = [c for c, s in states.items() if s == "holds" and (top is None or c < top)]
    return Bracket(max(holds, default=0), top)


def next_probe(states: Mapping[int, SloState], start: int, up_to: int) -> int | None:
    """The next concurrency to measure, or None when the bracket is as narrow as the integers
    allow (or the top, ``up_to``, holds). ``start``: the first probe."""
    if not states:
        return max(1, min(start, up_to))
    b = bracket(states)
    if b.fails_at is None:
        top = max(states)
        return None if top >= up_to else min(up_to, top * 2)
    inside = [c for c in range(b.holds_at + 1, b.fails_at) if c not in states]
    if not inside:
        return None
    mid = (b.holds_at + b.fails_at) / 2
    return min(inside, key=lambda c: (abs(c - mid), c))


@dataclass(frozen=True)
class MarginSample:
    """One probe: its margin (largest percentile/limit ratio), bootstrap replicates of it, and
    how many requests it measured (the fit's weight)."""

    concurrency: int
    margin: float
    replicates: np.ndarray
    requests: int


def crossing(cs: Sequence[int], fitted: Sequence[float]) -> float:
    """Where the increasing curve through (``cs``, ``fitted``), linear between points, reaches
    1: the last concurrency at or below it when it never does (the top probe: a lower bound),
    ``cs[0] − 1`` scaled toward 0 when the first point is already above it."""
    f = list(fitted)
    above = next((i for i, v in enumerate(f) if v > 1.0), None)
    if above is None:
        return float(cs[-1])
    if above == 0:
        return float(cs[0]) * min(1.0, 1.0 / f[0]) if f[0] > 0 else 0.0
    c0, c1, f0, f1 = cs[above - 1], cs[above], f[above - 1], f[above]
    return c0 + (1.0 - f0) / (f1 - f0) * (c1 - c0)


def _fit(margins: np.ndarray, weights: np.ndarray) -> np.ndarray:
    from scipy.optimize import isotonic_regression  # here: only a capacity search needs it

    return np.asarray(isotonic_regression(margins, weights=weights, increasing=True).x)


def isotonic_capacity(samples: Sequence[MarginSample], level: float = 0.95) -> Interval | None:
    """The capacity where the isotonic fit of the margins crosses 1 (a concurrency, not
    rounded), with its bootstrap percentile interval; None with fewer than two probes."""
    pts = sorted((s for s in samples if math.isfinite(s.margin)), key=lambda s: s.concurrency)
    if len(pts) < 2:
        return None
    cs = [s.concurrency for s in pts]
    w = np.asarray([max(1, s.requests) for s in pts], dtype=float)
    est = crossing(cs, list(_fit(np.asarray([s.margin for s in pts]), w)))
    n = min(s.replicates.size for s in pts)
    reps = np.vstack([s.replicates[:n] for s in pts])  # probes × resamples
    good = np.all(np.isfinite(reps), axis=0)
    xs = [crossing(cs, list(_fit(reps[:, b], w))) for b in np.flatnonzero(good)]
    if not xs:
        return Interval(est, math.nan, math.nan, level)
    alpha = (1 - level) / 2
    low, high = np.quantile(np.asarray(xs), [alpha, 1 - alpha])
    return Interval(est, float(low), float(high), level)


@dataclass(frozen=True)
class CapacityValue:
    """One config's stored capacity at SLO: the bracket ``[low, high]`` (``high`` None: at
    least ``low``), the isotonic estimate with its interval, the SLO and workload it is of,
    its unit (``concurrency``, or ``rate``: req/s) and what it covers of launches (``one
    launch``, ``across launches ±6.0%``; empty: stored before the bisection-wide budget)."""

    slo: str
    low: float
    high: float | None
    estimate: Interval | None = None
    workload: str = ""
    unit: str = "concurrency"
    launches: str = ""


@dataclass(frozen=True)
class CapacityRatio:
    """A candidate's capacity against the baseline's: the ratio of the isotonic estimates
    (interval from the intervals' ends: candidate low / baseline high, candidate high /
    baseline low), and the verdict of the brackets (``higher``/``lower`` only when the two
    capacity intervals separate); ``reason`` says why there is no ratio."""

    ratio: Interval | None
    verdict: Literal["higher", "lower", "no difference shown", "not comparable"]
    reason: str = ""


def compare_capacity(base: CapacityValue, cand: CapacityValue) -> CapacityRatio:
    """``cand`` against ``base``; not comparable under different SLOs, workloads or units (a
    capacity over request rate against one over concurrency)."""
    pairs = (
        ("capacity over", base.unit, cand.unit),
        ("SLO", base.slo, cand.slo),
        ("workload", base.workload, cand.workload),
    )
    for what, a, b in pairs:
        if a != b:
            return CapacityRatio(None, "not comparable", f"not comparable: {what} {b} vs {a}")
    if base.high is not None and cand.low > base.high:
        verdict: Literal["higher", "lower", "no difference shown"] = "higher"
    elif cand.high is not None and cand.high < base.low:
        verdict = "lower"
    else:
        verdict = "no difference shown"
    eb, ec = base.estimate, cand.estimate
    if eb is None or ec is None or eb.estimate <= 0:
        return CapacityRatio(None, verdict, "no isotonic estimate")
    low = ec.low / eb.high if eb.high > 0 else math.nan
    high = ec.high / eb.low if eb.low > 0 else math.inf
    return CapacityRatio(Interval(ec.estimate / eb.estimate, low, high, eb.level), verdict)
