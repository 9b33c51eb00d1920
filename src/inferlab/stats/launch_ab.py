"""An A/B whose unit is the launch: each side's launches of a config at one load point, each
read as (log of its value, standard error of that log: ``stats.launches.launch_estimate``).

Why launches: a server launched again reads differently (where its threads landed, the
machine's state, a host-bound step's luck), and more requests of one launch do not shrink
that. On the lent H200 the same FP8 A/B read ×0.771 [0.666, 0.891] on one day and ×0.586
[0.558, 0.615] two days later, each interval counting one launch's requests; the host-bound
candidate read 1.75–2.35 ms across five launches where each launch's own error was ~1%.

The model is the one-way random-effects model over launches (as ``stats.spread``): launch i
of side X reads ``y_i = μ_X + u_i + e_i`` with ``u_i ~ N(0, τ_X²)`` and ``e_i`` of known
standard error ``s_i``. The ratio's log is the difference of the two sides' launch means. A
side's variance of one launch value is estimated from its own launches (``S_X²``, ``k − 1``
df) and moderated by a prior spread measured elsewhere (``τ0² + mean s²`` with ``d0`` df: the
campaign's other configs launched more than once there, and the spreads stored for this
engine, model and host by earlier campaigns, ``store.spreads``), as in Smyth's moderated t
(2004): ``Ṽ = ((k−1) S² + d0 V0) / (k − 1 + d0)``. A side whose own launches vary more than
the moderated value keeps its own (``max``): a host-bound config that moves more than the
GPU-bound ones is not flattered by their spread. With one launch on a side and no prior, that
side borrows the other side's own launch variance (the same τ assumed, and said); with one
launch on each side and no prior at all, no interval is honest: the verdict is "undecided".
The t has the smaller side's degrees of freedom (the conservative df of Welch's test;
Satterthwaite's read 93% coverage at 2–3 launches a side), capped at the independent launch
differences there are (``k_b − 1 + k_c − 1 + d0``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.stats.dist import t_quantile, t_two_sided_p
from inferlab.stats.spread import LaunchSpread
from inferlab.stats.summary import Interval
from inferlab.stats.verdict import HIGHER_IS_BETTER as _HIGHER
from inferlab.stats.verdict import Verdict, decide, pct

__all__ = [
    "LaunchAB",
    "compare_launches",
    "launch_ab",
    "needed_text",
    "settled",
    "undecided",
]

Launch = tuple[float, float]  # (log value, standard error of that log)


@dataclass(frozen=True)
class _Side:
    """One side's launch mean, the variance of one launch value (``var``) and its df."""

    k: int
    mean: float
    var: float
    df: float
    own: bool  # the variance is the side's own launches' (not moderated down)
    borrowed: bool = False  # one launch, the other side's variance used


@dataclass(frozen=True)
class LaunchAB:
    """A launch-level log ratio candidate/baseline: its standard error and t df (None when
    undecided), the launches of each side, and what the prior was."""

    log_ratio: float
    se: float | None
    df: float | None
    k_baseline: int
    k_candidate: int
    prior: LaunchSpread | None
    note: str = ""
    #: the variance of one launch's log ratio, both sides' one-launch variances summed (None
    #: when undecided): what ``needed`` divides by the launches a side
    var_one: float | None = None

    def interval(self, level: float = 0.95) -> Interval:
        """The ratio's ``level`` interval (nan bounds when undecided)."""
        r = math.exp(self.log_ratio)
        if self.se is None or self.df is None:
            return Interval(r, math.nan, math.nan, level)
        half = t_quantile(1.0 - (1.0 - level) / 2.0, min(self.df, 1e8)) * self.se
        return Interval(r, math.exp(self.log_ratio - half), math.exp(self.log_ratio + half), level)

    def p_value(self) -> float | None:
        """Two-sided p of no change (None when undecided)."""
        if self.se is None or self.df is None:
            return None
        if self.se <= 0:
            return 0.0 if self.log_ratio else 1.0
        return t_two_sided_p(self.log_ratio / self.se, self.df)

    def needed(self, min_effect: float, level: float = 0.95) -> float:
        """Launches a side that would settle the verdict if today's estimate and launch spread
        held (a projection): the fewest n whose interval, ``var_one / n`` wide on a t with
        ``n − 1`` df plus the prior's, excludes 1 when |ratio − 1| ≥ ``min_effect`` (a claim)
        or lies within ±``min_effect`` otherwise (equivalence); inf when neither can come
        (undecided, or the estimate on the minimum effect's edge); above 999, the normal's."""
        if self.var_one is None or self.se is None:
            return math.inf
        d = self.log_ratio
        if abs(math.exp(d) - 1.0) >= min_effect:
            half = abs(d)
        else:
            half = min(math.log1p(min_effect) - d, d - math.log1p(-min(min_effect, 0.999)))
        if half <= 0:
            return math.inf
        q = 1.0 - (1.0 - level) / 2.0
        d0 = float(self.prior.df) if self.prior is not None else 0.0
        floor = math.ceil(self.var_one * (t_quantile(q, 1e8) / half) ** 2)
        if floor > 999:
            return float(floor)
        n = max(1, floor)
        while self.var_one * (t_quantile(q, max(1.0, n - 1 + d0)) / half) ** 2 > n:
            n += 1
        return float(n)

    def launches_text(self) -> str:
        """ "2 + 2 launches" (baseline + candidate)."""
        return f"{self.k_baseline} + {self.k_candidate} launches"


def _own(ys: Sequence[Launch]) -> tuple[float, float, float]:
    """(mean of the logs, their sample variance (nan below 2), mean squared sampling error)."""
    k = len(ys)
    mean = sum(y for y, _ in ys) / k
    s2 = sum(s * s for _, s in ys) / k
    var = sum((y - mean) ** 2 for y, _ in ys) / (k - 1) if k >= 2 else math.nan
    return mean, var, s2


def _side(ys: Sequence[Launch], prior: LaunchSpread | None) -> _Side | None:
    """One side moderated by ``prior`` (module docstring); None with one launch and no prior."""
    k = len(ys)
    mean, own, s2 = _own(ys)
    own = max(own, s2)  # launches that agree closer than their own errors: τ² = 0, not less
    if prior is None:
        return _Side(k, mean, own, k - 1.0, True) if k >= 2 else None
    v0 = prior.tau**2 + s2
    if k < 2:
        return _Side(k, mean, v0, float(prior.df), False)
    moderated = ((k - 1) * own + prior.df * v0) / (k - 1 + prior.df)
    if own > moderated:
        return _Side(k, mean, own, k - 1.0, True)
    return _Side(k, mean, moderated, k - 1.0 + prior.df, False)


def _borrowed(once: str, other: str, side: _Side, ys: Sequence[Launch]) -> str:
    """The note of a side launched once that borrows the other side's launch variance."""
    tau = math.sqrt(max(0.0, side.var - _own(ys)[2]))
    return (
        f"the {once}'s one launch assumed to vary as the {other}'s {side.k} "
        f"(launch-to-launch ±{tau:.1%})"
    )


def launch_ab(
    baseline: Sequence[Launch], candidate: Sequence[Launch], prior: LaunchSpread | None = None
) -> LaunchAB:
    """The launch-level log ratio of ``candidate`` over ``baseline`` (module docstring)."""
    if not baseline or not candidate:
        raise ValueError("each side needs at least one launch")
    b, c = _side(baseline, prior), _side(candidate, prior)
    d = _own(candidate)[0] - _own(baseline)[0]
    note = ""
    if b is None and c is None:
        return LaunchAB(d, None, None, 1, 1, None, "one launch each")
    if b is None and c is not None:  # one launch on one side, no prior: the other's τ
        b = _Side(1, _own(baseline)[0], c.var, c.df, True, borrowed=True)
        note = _borrowed("baseline", "candidate", c, candidate)
    elif c is None and b is not None:
        c = _Side(1, _own(candidate)[0], b.var, b.df, True, borrowed=True)
        note = _borrowed("candidate", "baseline", b, baseline)
    assert b is not None and c is not None
    vb, vc = b.var / b.k, c.var / c.k
    var = vb + vc
    if not math.isfinite(var):
        return LaunchAB(d, None, None, b.k, c.k, prior, "no launch variance")
    # the smaller side's df (the conservative df of Welch's test: Satterthwaite's is liberal
    # at 2-3 launches, 93% coverage at a nominal 95%), never more than the independent
    # launch differences there are
    cap = (b.k - 1) + (c.k - 1) + (prior.df if prior is not None else 0)
    sides = [df for v, df in ((vb, b.df), (vc, c.df)) if v > 0]
    df = max(1.0, min([*sides, float(max(cap, 1))]))
    se = math.sqrt(max(var, 0.0))
    return LaunchAB(d, se, df, b.k, c.k, prior, note, var_one=b.var + c.var)


def compare_launches(
    metric: str,
    baseline: Sequence[Launch],
    candidate: Sequence[Launch],
    *,
    prior: LaunchSpread | None = None,
    alpha: float = 0.05,
    min_effect: float = 0.02,
    level: float = 0.95,
) -> Verdict:
    """The verdict of ``metric`` over each side's launches (``launch_ab``): "better"/"worse"
    by ``stats.verdict.decide`` on the launch-level interval, "~ equivalent" when the interval
    lies within ±``min_effect``, "undecided: …" (claim "~") with one launch each and no prior."""
    try:
        higher = _HIGHER[metric]
    except KeyError:
        raise ValueError(f"unknown metric {metric!r}") from None
    ab = launch_ab(baseline, candidate, prior)
    ratio = ab.interval(level)
    if ab.se is None:
        why = (
            f"undecided: {ab.note or 'no launch variance'} ({pct(ratio.estimate - 1)} read), "
            "and no launch-to-launch spread measured for this engine, model and host: launch "
            "each config again ([load] launches = 2) or measure the spread once here"
        )
        return Verdict(ratio, None, "~", why)
    p = ab.p_value()
    v = decide(ratio, p, higher_is_better=higher, alpha=alpha, min_effect=min_effect)
    where = f"{ab.launches_text()}, t with {ab.df:.1f} df"
    if ab.prior is not None:
        where += f"; prior {ab.prior.describe()}"
    if ab.note:
        where += f"; {ab.note}"
    lo, hi = ratio.low, ratio.high
    if v.claim == "~" and 1.0 - min_effect <= lo and hi <= 1.0 + min_effect:
        why = f"equivalent: {level:.0%} interval ×{lo:.3f}…×{hi:.3f} lies within ±{min_effect:.0%}"
        return Verdict(ratio, p, "~", f"{why} [{where}]")
    if v.claim != "~":
        return Verdict(v.ratio, v.p_value, v.claim, f"{v.reason} [{where}]")
    n = ab.needed(min_effect, level)
    why = f"{v.reason} [{where}; {needed_text(n)} at this estimate and spread]"
    return Verdict(v.ratio, v.p_value, "~", why, needed=n)


def needed_text(n: float) -> str:
    """ "about 31 launches a side would settle it" (``LaunchAB.needed``'s projection)."""
    if not math.isfinite(n):
        return "no number of launches would settle it"
    return f"{'over 999' if n > 999 else f'about {n:.0f}'} launches a side would settle it"


def undecided(v: Verdict) -> bool:
    """Whether ``v`` is the no-interval verdict of one launch each and no prior."""
    return v.reason.startswith("undecided:")


def settled(v: Verdict) -> bool:
    """Whether ``v`` needs no more launches: claimed, or equivalent within the minimum effect."""
    return v.claim != "~" or v.reason.startswith("equivalent:")
