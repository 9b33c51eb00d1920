"""Launch-to-launch spread: how far one launch of a config reads from another launch of the
same config at the same load point, beyond what each launch's own requests explain.

A one-launch-per-side A/B (a candidate's pass against the baseline's pass beside it) has two
sources of error: each pass's sampling error (its batch means, its median's bootstrap), which
more requests shrink, and each launch's own offset (where the server's threads landed, the
machine's state in those minutes), which they do not. On a 2-vCPU machine the baseline's five
passes of ``make demo`` read median TPOT 3-7% apart (sd of the log) where each pass's own
standard error was 1-2.5% (benchmarks/RESULTS.md): an A/B without the launch term called
12 of 15 baseline-against-baseline pairs "drift".

The model is the one-way random-effects model of meta-analysis: launch i of a config reads
``y_i = μ + u_i + e_i`` on the log scale, ``u_i ~ N(0, τ²)`` its launch offset, ``e_i`` its
sampling error of known standard error ``s_i``. ``τ²`` is estimated by moments (DerSimonian &
Laird 1986, with equal weights), pooled over every config launched more than once at the
point: ``τ² = max(0, Σ_c [Σ_i (y_ci − ȳ_c)² − (k_c − 1)/k_c · Σ_i s_ci²] / Σ_c (k_c − 1))``.
A one-launch A/B's log ratio then has variance ``s_a² + s_b² + 2τ²``; the interval uses
Student's t with Welch–Satterthwaite degrees of freedom, the τ² term carrying the ``Σ (k_c −
1)`` it was estimated from (the sampling terms counted as known).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.stats.dist import t_quantile, t_two_sided_p

__all__ = ["LaunchSpread", "Widened", "launch_spread", "pool_spreads", "widen"]


@dataclass(frozen=True)
class LaunchSpread:
    """One metric's launch-to-launch spread at one load point: ``tau`` the standard deviation
    of a launch's offset on the log scale (0.05 ≈ ±5%), from ``launches`` launches of the
    configs launched more than once there, with ``df`` = Σ (launches of a config − 1);
    ``within``: those launches' mean squared sampling error (what the estimate subtracted)."""

    tau: float
    df: int
    launches: int
    within: float = 0.0
    #: where it was measured, when not this campaign's own launches ("stored: campaign
    #: demo, 2026-12-04")
    source: str = ""

    def describe(self) -> str:
        """ "launch-to-launch ±5.5% (sd of a launch's log offset; 5 launches, 4 df)"."""
        where = f"; {self.source}" if self.source else ""
        # an estimate of 0 is a boundary: the launches differed no more than their own
        # sampling error, which the interval's t counts (``widen``), not "no spread"
        floor = (
            f"not above the launches' own sampling error ±{math.sqrt(self.within):.1%}; "
            if self.tau == 0 and self.within > 0
            else ""
        )
        return (
            f"launch-to-launch ±{self.tau:.1%} ({floor}sd of a launch's log offset; "
            f"{self.launches} launches, {self.df} df{where})"
        )


def launch_spread(configs: Sequence[Sequence[tuple[float, float]]]) -> LaunchSpread | None:
    """The pooled spread (module docstring) from each config's launches, each launch as
    (log of its value, standard error of that log); None when no config has two launches."""
    num, df, launches, within = 0.0, 0, 0, 0.0
    for ys in configs:
        k = len(ys)
        if k < 2:
            continue
        mean = sum(y for y, _ in ys) / k
        num += sum((y - mean) ** 2 for y, _ in ys) - (k - 1) / k * sum(s * s for _, s in ys)
        df += k - 1
        launches += k
        within += sum(s * s for _, s in ys)
    if df == 0:
        return None
    return LaunchSpread(math.sqrt(max(0.0, num / df)), df, launches, within / launches)


def pool_spreads(*spreads: LaunchSpread | None) -> LaunchSpread | None:
    """Several spreads of one metric at one point as one: τ² and the sampling term weighted
    by their degrees of freedom, the df and launches added; None when there is none."""
    got = [s for s in spreads if s is not None and s.df > 0]
    if not got:
        return None
    df = sum(s.df for s in got)
    tau2 = sum(s.df * s.tau**2 for s in got) / df
    within = sum(s.df * s.within for s in got) / df
    source = "; ".join(dict.fromkeys(s.source for s in got if s.source))
    if source and any(not s.source for s in got):
        source = f"this campaign's and {source}"
    return LaunchSpread(math.sqrt(tau2), df, sum(s.launches for s in got), within, source)


@dataclass(frozen=True)
class Widened:
    """A log ratio's standard error with the launch term (``se``), the degrees of freedom of
    its t (``df``, inf when there is no launch term) and the two-sided p-value of no change."""

    se: float
    df: float
    p_value: float

    def quantile(self, level: float) -> float:
        """The two-sided critical value at ``level`` (t with ``df``; the normal's when inf)."""
        return t_quantile(1.0 - (1.0 - level) / 2.0, min(self.df, 1e8))


def widen(log_ratio: float, se_within: float, spread: LaunchSpread) -> Widened:
    """A one-launch-per-side log ratio's error with both launches' offsets added:
    ``se² = se_within² + 2τ²``; its t's degrees of freedom by Welch–Satterthwaite. The
    estimate of τ² is the launches' variance less their sampling error, so its own variance
    is that of the launches' variance, ``2(τ² + within)²/df``; for a pair whose sampling error
    is the launches' own, the t then has exactly ``df``."""
    launch_var = 2.0 * spread.tau**2
    var = se_within**2 + launch_var
    if var <= 0:
        return Widened(0.0, math.inf, 0.0 if log_ratio else 1.0)
    # the launch term's estimated variance: also when τ² was estimated at 0, which its df say
    # little about; at least 1 df, for a pair measured far more precisely than the launches
    uncertain = 2.0 * (spread.tau**2 + spread.within)
    df = max(1.0, var**2 * spread.df / uncertain**2) if uncertain > 0 else math.inf
    se = math.sqrt(var)
    return Widened(se, df, t_two_sided_p(log_ratio / se, df))
