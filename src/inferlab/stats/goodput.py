"""Two goodput shares compared by a test of two proportions, not by whether their two
intervals overlap.

The difference of the shares, candidate − baseline, gets Newcombe's hybrid score interval
(Newcombe 1998, "Interval estimation for the difference between independent proportions",
Statistics in Medicine 17:873-890, method 10): from each share's Wilson interval ``(l, u)`` at
the same level, ``L = d − √((p₁ − l₁)² + (u₂ − p₂)²)``, ``U = d + √((u₁ − p₁)² + (p₂ − l₂)²)``
(``p₁`` the candidate's). *Better* when ``L > 0``, *worse* when ``U < 0``, *equivalent* when
the interval lies inside ``±min_effect`` (shares, 0–1), else *undecided*. Two 95% Wilson
intervals that do not overlap are a test at about α = 0.005 (and one that is not a test of the
difference at all); this one holds its level, about α, for the difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

from inferlab.stats.summary import Interval

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["GoodputAB", "compare_goodput", "goodput_stop", "newcombe", "wilson_bounds"]

GoodputVerdict = Literal["better", "worse", "equivalent", "undecided"]


def wilson_bounds(good: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of the share ``good / n`` (closed form; NaNs when n is 0)."""
    if n <= 0:
        return math.nan, math.nan
    if not 0 <= good <= n:
        raise ValueError(f"good must be in 0..{n}, got {good}")
    z = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
    p, z2 = good / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(good_b: int, n_b: int, good_c: int, n_c: int, level: float = 0.95) -> Interval:
    """The candidate's share minus the baseline's (``good_c / n_c − good_b / n_b``) with
    Newcombe's hybrid score interval (module docstring)."""
    if n_b <= 0 or n_c <= 0:
        nan = math.nan
        return Interval(nan, nan, nan, level)
    p1, p2 = good_c / n_c, good_b / n_b
    l1, u1 = wilson_bounds(good_c, n_c, level)
    l2, u2 = wilson_bounds(good_b, n_b, level)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return Interval(d, low, high, level)


@dataclass(frozen=True)
class GoodputAB:
    """A goodput A/B: the difference of the shares (candidate − baseline, 0–1, Newcombe
    interval), the verdict and its sentence."""

    difference: Interval
    verdict: GoodputVerdict
    reason: str

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "difference": self.difference.to_json(),
            "verdict": self.verdict,
            "reason": self.reason,
        }


def compare_goodput(
    base: tuple[int, int],
    cand: tuple[int, int],
    *,
    level: float = 0.95,
    min_effect: float | None = None,
    against: str = "baseline",
) -> GoodputAB:
    """``cand`` (good, requests) against ``base``: better/worse when the difference's interval
    excludes 0, equivalent when it lies inside ``±min_effect`` (a share, e.g. 0.02)."""
    d = newcombe(base[0], base[1], cand[0], cand[1], level)
    if math.isnan(d.low):
        return GoodputAB(d, "undecided", f"no requests measured (this run or {against})")
    verdict: GoodputVerdict = "undecided"
    if d.low > 0:
        verdict = "better"
    elif d.high < 0:
        verdict = "worse"
    elif min_effect is not None and -min_effect < d.low and d.high < min_effect:
        verdict = "equivalent"
    pct = 100.0
    lvl = f"{level * pct:.4g}%"
    reason = (
        f"goodput share [{cand[0]}/{cand[1]}] vs {against} [{base[0]}/{base[1]}]: "
        f"{d.estimate * pct:+.1f} points [{d.low * pct:+.1f}, {d.high * pct:+.1f}] "
        f"(Newcombe {lvl} interval of the difference): {verdict}"
    )
    return GoodputAB(d, verdict, reason)


def goodput_stop(
    base: tuple[int, int],
    cand: tuple[int, int],
    *,
    looks: int,
    alpha: float = 0.05,
    min_effect: float | None = 0.02,
    against: str = "baseline",
) -> GoodputAB | None:
    """A sequential goodput A/B's stopping rule, one call a look: the A/B at level
    ``1 − alpha / looks`` (Bonferroni over the ``looks`` planned, so that stopping at the
    first settled look keeps the false-claim rate ≤ ``alpha``); the settled A/B (better,
    worse or equivalent), or None to go on measuring."""
    if looks < 1 or not 0 < alpha < 1:
        raise ValueError(f"looks must be ≥ 1 and alpha in (0, 1), got {looks}, {alpha}")
    ab = compare_goodput(
        base, cand, level=1.0 - alpha / looks, min_effect=min_effect, against=against
    )
    return None if ab.verdict == "undecided" else ab
