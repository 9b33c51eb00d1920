"""Group-sequential A/B: boundaries from an alpha-spending function, and the decision at a look.

The statistic at look k is ``Z_k`` (the log ratio over its standard error), computed on all data
so far at information fraction ``t_k`` (requests measured / planned maximum). Under the null,
``Z_k √t_k`` has independent normal increments (a Brownian motion in information time), so the
probability of crossing ``±c_k`` at look k and not before is an integral over the continuation
region of the previous looks (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000,
ch. 19). ``crossing_probabilities`` evaluates it by recursive numerical integration on a grid;
``spending_boundaries`` solves look by look for the ``c_k`` that spends exactly
``α(t_k) − α(t_{k−1})`` (Lan & DeMets 1983), and ``obrien_fleming_boundaries`` finds the
constant of the classic design ``c_k = C / √t_k``. docs/compare.md gives the numbers.

scipy is imported in the functions that use it: it costs about 1 s on 2 CPUs, which every
``inferlab`` command that reaches this module would otherwise pay at start.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "LookDecision",
    "crossing_probabilities",
    "decide_look",
    "ld_obrien_fleming",
    "obrien_fleming_boundaries",
    "spending_boundaries",
]

_GRID = 401  # least grid points over a continuation region (Simpson's rule; ~1e-9 accurate)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


@functools.lru_cache(maxsize=16)
def ld_obrien_fleming(
    alpha: float, one_sided_alpha: float | None = None
) -> Callable[[float], float]:
    """Lan–DeMets O'Brien–Fleming-type spending of a two-sided ``alpha``:
    α(t) = 2 − 2 Φ(z_{1−α/2} / √t) (Lan & DeMets 1983). With ``one_sided_alpha`` a, the
    convention of gsDesign's ``sfLDOF`` for a symmetric design: each side spends
    2 − 2 Φ(z_{1−a/2} / √t), twice that in all (``alpha`` is then ignored)."""
    from scipy import stats

    if one_sided_alpha is not None:
        za = float(stats.norm.ppf(1.0 - one_sided_alpha / 2.0))
        return lambda t: 0.0 if t <= 0 else float(4.0 * stats.norm.sf(za / math.sqrt(min(t, 1.0))))
    z = float(stats.norm.ppf(1.0 - alpha / 2.0))
    return lambda t: 0.0 if t <= 0 else float(2.0 * stats.norm.sf(z / math.sqrt(min(t, 1.0))))


def _check_info(info: Sequence[float]) -> np.ndarray:
    t = np.asarray(info, dtype=float)
    if t.size == 0 or np.any(t <= 0) or np.any(np.diff(t) <= 0) or t[-1] > 1.0 + 1e-12:
        raise ValueError(f"information fractions must increase within (0, 1], got {list(info)}")
    return t


def _simpson_weights(n: int, h: float) -> np.ndarray:
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * h / 3.0


@dataclass
class _State:
    """The null density of S_k = Z_k √t_k on the continuation region of looks 1..k."""

    grid: np.ndarray
    dens: np.ndarray
    weights: np.ndarray

    @classmethod
    def first(cls, bound: float, t: float) -> _State:
        from scipy import stats

        b = bound * math.sqrt(t)
        grid = np.linspace(-b, b, _GRID)
        dens = stats.norm.pdf(grid / math.sqrt(t)) / math.sqrt(t)
        return cls(grid, dens, _simpson_weights(_GRID, grid[1] - grid[0]))

    def cross(self, sd: float, bound: float) -> float:
        """P(still running, then |S| ≥ ``bound`` after an increment of standard deviation
        ``sd``)."""
        from scipy import stats

        g, m = self.grid, self.dens * self.weights
        tail = stats.norm.sf((bound - g) / sd) + stats.norm.cdf((-bound - g) / sd)
        return float(np.sum(m * tail))

    def advance(self, sd: float, bound: float) -> _State:
        """The density after the increment, on the new continuation region (−bound, bound)."""
        n = max(_GRID, int(2 * bound / sd * 20) | 1)
        g = np.linspace(-bound, bound, n)
        x = (g[:, None] - self.grid[None, :]) / sd
        kern = np.exp(-0.5 * x * x) / (_SQRT_2PI * sd)
        return _State(g, kern @ (self.dens * self.weights), _simpson_weights(n, g[1] - g[0]))


def crossing_probabilities(bounds: Sequence[float], info: Sequence[float]) -> list[float]:
    """P(first |Z_k| ≥ c_k at look k) under the null, for z-scale ``bounds`` c_k at
    information fractions ``info``."""
    from scipy import stats

    t = _check_info(info)
    if len(bounds) != t.size:
        raise ValueError("one boundary per look")
    out = [float(2.0 * stats.norm.sf(bounds[0]))]
    state = _State.first(bounds[0], float(t[0]))
    for k in range(1, t.size):
        sd, b = math.sqrt(t[k] - t[k - 1]), bounds[k] * math.sqrt(t[k])
        out.append(state.cross(sd, b))
        if k + 1 < t.size:
            state = state.advance(sd, b)
    return out


@functools.lru_cache(maxsize=64)
def _spending(info: tuple[float, ...], spend: Callable[[float], float]) -> tuple[float, ...]:
    from scipy import optimize, stats

    t = _check_info(info)
    bounds: list[float] = []
    spent = 0.0
    state: _State | None = None
    for k in range(t.size):
        target = spend(float(t[k])) - spent
        if k == 0:
            c = float(stats.norm.isf(target / 2.0))
            state = _State.first(c, float(t[0]))
        else:
            assert state is not None
            sd, st = math.sqrt(t[k] - t[k - 1]), math.sqrt(t[k])

            def excess(
                c: float, s: _State = state, sd: float = sd, st: float = st, goal: float = target
            ) -> float:
                return s.cross(sd, c * st) - goal

            c = float(optimize.brentq(excess, 0.1, 12.0, xtol=1e-9))
            if k + 1 < t.size:
                state = state.advance(sd, c * st)
        bounds.append(c)
        spent += target
    return tuple(bounds)


def spending_boundaries(info: Sequence[float], spend: Callable[[float], float]) -> list[float]:
    """Two-sided z boundaries c_k such that the null crossing probability at look k is
    ``spend(t_k) − spend(t_{k−1})`` (Lan–DeMets)."""
    return list(_spending(tuple(float(x) for x in info), spend))


def obrien_fleming_boundaries(info: Sequence[float], alpha: float = 0.05) -> list[float]:
    """The classic O'Brien–Fleming design: c_k = C / √t_k with C chosen so the total null
    crossing probability is ``alpha`` (two-sided)."""
    from scipy import optimize

    t = _check_info(info)

    def excess(c: float) -> float:
        bounds = [c / math.sqrt(float(x)) for x in t]
        return float(np.sum(crossing_probabilities(bounds, [float(x) for x in t]))) - alpha

    c = float(optimize.brentq(excess, 1.0, 6.0, xtol=1e-8))
    return [c / math.sqrt(x) for x in t]


Status = Literal["better", "worse", "equivalent", "open"]


@dataclass(frozen=True, slots=True)
class LookDecision:
    """One metric at one look: the ratio, its repeated confidence interval at the look's
    boundary (``exp(log r ± c_k·se)``), z, and what it settles."""

    ratio: float
    low: float
    high: float
    z: float
    boundary: float
    status: Status


def decide_look(
    log_ratio: float,
    se: float,
    boundary: float,
    *,
    higher_is_better: bool,
    min_effect: float,
) -> LookDecision:
    """``better``/``worse`` when |z| ≥ the boundary and |ratio − 1| ≥ ``min_effect``;
    ``equivalent`` when the whole repeated interval lies within ±``min_effect``; else
    ``open`` (measure on)."""
    ratio = math.exp(log_ratio)
    if not (math.isfinite(log_ratio) and math.isfinite(se)) or se < 0:
        return LookDecision(ratio, math.nan, math.nan, math.nan, boundary, "open")
    half = boundary * se
    low, high = math.exp(log_ratio - half), math.exp(log_ratio + half)
    z = log_ratio / se if se > 0 else math.copysign(math.inf, log_ratio) if log_ratio else 0.0
    status: Status = "open"
    if abs(z) >= boundary and abs(ratio - 1.0) >= min_effect:
        status = "better" if (ratio > 1.0) == higher_is_better else "worse"
    elif 1.0 - min_effect <= low and high <= 1.0 + min_effect:
        status = "equivalent"
    return LookDecision(ratio, low, high, z, boundary, status)
