"""Multi-turn sessions: TTFT and prompt length by turn index, where a prefix cache shows.

A turn's prompt resends the whole conversation so far, so later turns are longer: without a
prefix cache their TTFT grows with the history; with one, only the new tokens are prefilled.
A turn has one request per user, so its median rests on a handful of values (2 to 8 users is
common). Its interval is the distribution-free order-statistic interval of a median
(``median_interval``): [x_(k), x_(n-k+1)] of the n sorted values covers the true median with
probability exactly 1 − 2·P(B ≤ k−1), B ~ Binomial(n, ½), for any continuous distribution
(Conover, *Practical Nonparametric Statistics*, 3rd ed., §3.2). k is the largest whose
coverage is at least 95%, and the coverage it achieves is stated (96.9% at n = 6, 98.4% at
n = 7). Below :data:`MIN_USERS` (6) even [min, max] covers less than 95% (n = 5: 93.75%;
3: 75%), so no interval is given: "too few users (n=3) for a 95% interval". A percentile
bootstrap of 2–4 values, used before, covered 50–87.5% while it said 95%.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.records import RequestRecord
from inferlab.stats.summary import Figures

__all__ = ["MIN_USERS", "TurnStats", "by_turn", "median_interval", "turn_interval_text"]

LEVEL = 0.95

#: fewest values whose [min, max] covers the median with probability ≥ 95% (1 − 2/2^6)
MIN_USERS = 6


def _binom_cdf_half(k: int, n: int) -> float:
    """P(B ≤ k) for B ~ Binomial(n, ½)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n


def median_interval(
    values: Sequence[float], level: float = LEVEL
) -> tuple[float, float, float | None]:
    """(low, high, coverage) of the order-statistic interval for the median of ``values``:
    the narrowest symmetric [x_(k), x_(n-k+1)] whose exact coverage is ≥ ``level``; (nan,
    nan, None) when even [min, max] covers less (fewer than 6 values at 95%)."""
    xs = sorted(values)
    n = len(xs)
    best: tuple[float, float, float | None] = (math.nan, math.nan, None)
    for k in range(1, n // 2 + 1):
        coverage = 1.0 - 2.0 * _binom_cdf_half(k - 1, n)
        if coverage < level:
            break
        best = (xs[k - 1], xs[n - k], coverage)
    return best


@dataclass(frozen=True)
class TurnStats(Figures):
    """One turn index over every user: requests counted, failed, median TTFT (ms) with its
    order-statistic interval (ms; NaN when too few users) and the coverage that interval
    achieves (≥ 95%; None: no interval), and the mean prompt length (tokens, as the server
    counted)."""

    turn: int
    requests: int
    failed: int
    ttft_p50_ms: float
    ttft_p50_low_ms: float
    ttft_p50_high_ms: float
    prompt_tokens_mean: float | None
    ttft_p50_coverage: float | None = None

    @property
    def users(self) -> int:
        """Values behind the median: the turn's successful requests."""
        return self.requests - self.failed


def turn_interval_text(t: TurnStats) -> str:
    """``4.2 [3.8, 4.3] (96.9%)``, or ``4.2 (too few users (n=3) for a 95% interval)``."""
    if t.ttft_p50_coverage is None:
        if math.isnan(t.ttft_p50_ms):
            return "—"
        return f"{t.ttft_p50_ms:.1f} (too few users (n={t.users}) for a 95% interval)"
    return (
        f"{t.ttft_p50_ms:.1f} [{t.ttft_p50_low_ms:.1f}, {t.ttft_p50_high_ms:.1f}] "
        f"({t.ttft_p50_coverage:.1%})"
    )


def by_turn(records: Sequence[RequestRecord], seed: int = 0) -> list[TurnStats]:
    """TTFT by turn of a sessions point's counted requests (others are left out); [] when
    no request has a turn. ``seed`` is unused (the interval is exact, not resampled)."""
    del seed
    turns: dict[int, list[RequestRecord]] = {}
    for r in records:
        if r.turn is not None and r.counted:
            turns.setdefault(r.turn, []).append(r)
    out = []
    for t in sorted(turns):
        rs = turns[t]
        ok = [r for r in rs if r.ok and r.ttft_ns is not None]
        ttft = [r.ttft_ns / 1e6 for r in ok if r.ttft_ns is not None]
        low, high, coverage = median_interval(ttft)
        prompts = [r.usage_prompt_tokens for r in ok if r.usage_prompt_tokens is not None]
        out.append(
            TurnStats(
                turn=t,
                requests=len(rs),
                failed=len(rs) - len(ok),
                ttft_p50_ms=statistics.median(ttft) if ttft else math.nan,
                ttft_p50_low_ms=low,
                ttft_p50_high_ms=high,
                prompt_tokens_mean=statistics.fmean(prompts) if prompts else None,
                ttft_p50_coverage=coverage,
            )
        )
    return out
