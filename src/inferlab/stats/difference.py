"""Tests of difference on raw samples: Mann–Whitney U, permutation test, Welch's t (two-sided)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inferlab.stats.dist import _normal_two_sided_p, _t_cdf
from inferlab.stats.samples import CHUNK_ELEMENTS, finite_array

__all__ = ["MannWhitney", "mann_whitney_u", "min_attainable_p", "permutation_test", "welch_t_test"]

_EXACT_LIMIT = 20_000  # enumerate every split up to this many; Monte Carlo above


@dataclass(frozen=True, slots=True)
class MannWhitney:
    """Mann–Whitney U of ``a`` (count of pairs with a > b, ties ½), its normal-approximation
    z (tie- and continuity-corrected) and the two-sided p-value."""

    u: float
    z: float
    p_value: float


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Two-sided Mann–Whitney U test (normal approximation with tie and continuity
    correction, as scipy's ``method="asymptotic"``). Unit-free; p = 1 when every value ties.
    Raises ValueError on an empty side or NaN."""
    x = finite_array(a, "first sample")
    y = finite_array(b, "second sample")
    n1, n2 = x.size, y.size
    pooled = np.concatenate([x, y])
    ranks = _average_ranks(pooled)
    u = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    _, counts = np.unique(pooled, return_counts=True)
    ties = float((counts.astype(float) ** 3 - counts).sum())
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    mu = n1 * n2 / 2.0
    if var <= 0:
        return MannWhitney(u, 0.0, 1.0)
    z = max(abs(u - mu) - 0.5, 0.0) / math.sqrt(var)
    return MannWhitney(u, math.copysign(z, u - mu), min(1.0, _normal_two_sided_p(z)))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties get the average of the ranks they span."""
    order = np.argsort(x, kind="mergesort")
    s = x[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    ends = np.r_[starts[1:], s.size]
    avg = (starts + ends + 1) / 2.0  # mean of ranks start+1 … end
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def min_attainable_p(n_a: int, n_b: int) -> float:
    """Smallest two-sided p a permutation (or exact rank) test can give with ``n_a`` vs
    ``n_b`` distinct values: 2 / C(n_a + n_b, n_a). 3 vs 3 → 0.1, 4 vs 4 → 0.029."""
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


def permutation_test(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 9999, seed: int = 0
) -> float:
    """Two-sided permutation test of the difference of means; returns the p-value. Exact
    (every split) up to 20 000 splits, else ``resamples`` random splits (seeded), with
    p = (1 + hits) / (1 + resamples). Raises ValueError on an empty side or NaN."""
    x = finite_array(a, "first sample")
    y = finite_array(b, "second sample")
    pooled = np.concatenate([x, y])
    n1, n = x.size, x.size + y.size
    total = float(pooled.sum())
    obs = abs(float(x.mean()) - float(y.mean()))
    eps = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    splits = math.comb(n, n1)

    def diffs(sum_a: np.ndarray) -> np.ndarray:
        return np.abs(sum_a / n1 - (total - sum_a) / (n - n1))

    if splits <= _EXACT_LIMIT:
        combos = np.fromiter(
            itertools.chain.from_iterable(itertools.combinations(range(n), n1)),
            dtype=np.int64,
            count=splits * n1,
        ).reshape(splits, n1)
        d = diffs(pooled[combos].sum(axis=1))
        return float(np.count_nonzero(d >= obs - eps)) / splits
    rng = np.random.default_rng(seed)
    hits = 0
    chunk = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, resamples, chunk):
        k = min(chunk, resamples - start)
        perm = rng.permuted(np.broadcast_to(pooled, (k, n)), axis=1)
        hits += int(np.count_nonzero(diffs(perm[:, :n1].sum(axis=1)) >= obs - eps))
    return (1.0 + hits) / (1.0 + resamples)


def welch_t_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of Welch's unequal-variance t-test (≥ 2 values per side)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        raise ValueError("Welch's t-test needs at least 2 values per side")
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    se2 = va + vb
    if se2 <= 0:
        return 0.0 if x.mean() != y.mean() else 1.0
    t = float((y.mean() - x.mean()) / np.sqrt(se2))
    df = se2**2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    return float(2.0 * (1.0 - _t_cdf(abs(t), float(df))))
