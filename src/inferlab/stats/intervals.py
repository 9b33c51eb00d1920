"""Intervals of a ratio candidate/baseline: bootstrap over requests or trials, batch means."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Literal

import numpy as np

from inferlab.stats.dist import t_quantile
from inferlab.stats.samples import CHUNK_ELEMENTS, finite_array, trials_arrays
from inferlab.stats.summary import Interval

__all__ = [
    "QUANTILES",
    "Statistic",
    "check_level",
    "percentile_interval",
    "reducer",
    "sample_ratio",
    "throughput_ratio_batches",
    "throughput_ratio_trials",
]

Statistic = Literal["mean", "median", "p90", "p95", "p99"]

#: statistic name → its percentile (0–100)
QUANTILES: Mapping[str, float] = MappingProxyType(
    {"median": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
)


def reducer(statistic: Statistic) -> Callable[[np.ndarray], np.ndarray]:
    """Row-wise statistic of a 2-D array (quantiles: linear interpolation, numpy's default)."""
    if statistic == "mean":
        return lambda v: v.mean(axis=1)
    if statistic not in QUANTILES:
        raise ValueError(f"unknown statistic {statistic!r}; known: mean, {', '.join(QUANTILES)}")
    q = QUANTILES[statistic] / 100.0

    def quantile(v: np.ndarray) -> np.ndarray:
        h = (v.shape[1] - 1) * q  # numpy's "linear" method, by partition (2× its speed)
        lo = math.floor(h)
        hi = min(lo + 1, v.shape[1] - 1)
        part = np.partition(v, sorted({lo, hi}), axis=1)
        return np.asarray(part[:, lo] + (h - lo) * (part[:, hi] - part[:, lo]))

    return quantile


def _reduce_padded(statistic: Statistic, v: np.ndarray) -> np.ndarray:
    """Row-wise statistic of a 2-D array whose rows end in NaN padding."""
    if statistic == "mean":
        return np.asarray(np.nanmean(v, axis=1))
    q = QUANTILES[statistic] / 100.0
    s = np.sort(v, axis=1)  # NaN sorts last
    count = np.count_nonzero(~np.isnan(s), axis=1)
    h = (count - 1) * q
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, count - 1)
    vlo = np.take_along_axis(s, lo[:, None], axis=1)[:, 0]
    vhi = np.take_along_axis(s, hi[:, None], axis=1)[:, 0]
    return np.asarray(vlo + (h - lo) * (vhi - vlo))


def _bootstrap_stat(
    trials: list[np.ndarray], statistic: Statistic, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """``resamples`` bootstrap replicates of the statistic: with one trial, resample requests;
    with several, resample trials, then requests within each chosen trial, and pool."""
    k = len(trials)
    sizes = np.array([t.size for t in trials], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    flat = np.concatenate(trials)
    nmax = int(sizes.max())
    equal = bool((sizes == nmax).all())
    fn = reducer(statistic)
    out = np.empty(resamples)
    chunk = max(1, CHUNK_ELEMENTS // (k * nmax))
    for start in range(0, resamples, chunk):
        m = min(chunk, resamples - start)
        choice = rng.integers(0, k, size=(m, k)) if k > 1 else np.zeros((m, 1), dtype=np.int64)
        n_c = sizes[choice][:, :, None]
        high = nmax if equal else n_c  # a scalar bound draws ~3× faster
        idx = offsets[choice][:, :, None] + rng.integers(0, high, size=(m, k, nmax))
        if equal:
            out[start : start + m] = fn(flat[idx].reshape(m, k * nmax))
        else:
            vals = flat[np.minimum(idx, flat.size - 1)]
            vals[np.arange(nmax)[None, None, :] >= n_c] = np.nan
            out[start : start + m] = _reduce_padded(statistic, vals.reshape(m, k * nmax))
    return out


def _point(trials: list[np.ndarray], statistic: Statistic) -> float:
    return float(reducer(statistic)(np.concatenate(trials)[None, :])[0])


def percentile_interval(
    estimate: float, replicates: np.ndarray, level: float, what: str = "the statistic"
) -> Interval:
    """``estimate`` with the ``level`` percentile interval of its bootstrap ``replicates``
    (``ValueError`` naming ``what`` when a replicate is undefined)."""
    bad = int(np.count_nonzero(~np.isfinite(replicates)))
    if bad:
        raise ValueError(
            f"{bad} of {replicates.size} bootstrap ratios are undefined ({what} is 0 in some "
            "resamples)"
        )
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(replicates, [alpha, 1.0 - alpha])
    return Interval(estimate, float(low), float(high), level)


def check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")


def sample_ratio(
    baseline: Sequence[Sequence[float]],
    candidate: Sequence[Sequence[float]],
    *,
    statistic: Statistic = "median",
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Ratio candidate/baseline of ``statistic`` over per-request samples (any unit: the
    ratio is unit-free), each side given as a list of trials, each a list of samples.
    Percentile bootstrap, each side resampled independently: one trial → over requests;
    several → two levels (trials, then requests within each). Raises ValueError on empty
    input, NaN, or a baseline statistic of 0."""
    check_level(level)
    base = trials_arrays(baseline, "baseline")
    cand = trials_arrays(candidate, "candidate")
    b0 = _point(base, statistic)
    if b0 == 0:
        raise ValueError(f"the baseline {statistic} is 0; a ratio is undefined")
    estimate = _point(cand, statistic) / b0
    rng_b = np.random.default_rng([seed, 0])
    rng_c = np.random.default_rng([seed, 1])
    rb = _bootstrap_stat(base, statistic, resamples, rng_b)
    rc = _bootstrap_stat(cand, statistic, resamples, rng_c)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = rc / rb
    return percentile_interval(estimate, ratios, level, f"the baseline {statistic}")


def throughput_ratio_trials(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Ratio of mean throughput over trials (tok/s per trial; ≥ 2 trials per side),
    percentile bootstrap over trials, each side resampled independently."""
    check_level(level)
    x = finite_array(baseline, "baseline trials")
    y = finite_array(candidate, "candidate trials")
    if x.size < 2 or y.size < 2:
        raise ValueError(f"a bootstrap over trials needs ≥ 2 per side, got {x.size} and {y.size}")
    if x.mean() <= 0:
        raise ValueError("the baseline throughput is 0; a ratio is undefined")
    rng = np.random.default_rng(seed)
    mb = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    mc = y[rng.integers(0, y.size, size=(resamples, y.size))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = mc / mb
    return percentile_interval(float(y.mean() / x.mean()), ratios, level, "the baseline throughput")


def throughput_ratio_batches(
    baseline_tok_s: float,
    baseline_batches: Sequence[float],
    candidate_tok_s: float,
    candidate_batches: Sequence[float],
    *,
    level: float = 0.95,
) -> Interval:
    """Ratio of single-trial throughputs (tok/s) with a batch-means interval: each side's
    relative standard error is sd/(mean·√k) of its k batch rates (tok/s); they add on the log
    scale (delta method) with Welch–Satterthwaite degrees of freedom and a Student t."""
    check_level(level)
    xa = finite_array(baseline_batches, "baseline batch rates")
    xb = finite_array(candidate_batches, "candidate batch rates")
    if xa.size < 2 or xb.size < 2:
        raise ValueError(f"batch means need ≥ 2 batches per side, got {xa.size} and {xb.size}")
    if not (math.isfinite(baseline_tok_s) and math.isfinite(candidate_tok_s)):
        raise ValueError("a throughput is NaN")
    if baseline_tok_s <= 0 or xa.mean() <= 0 or xb.mean() <= 0:
        raise ValueError("a throughput is 0; a ratio is undefined")
    va = float(xa.var(ddof=1)) / float(xa.mean()) ** 2 / xa.size
    vb = float(xb.var(ddof=1)) / float(xb.mean()) ** 2 / xb.size
    estimate = candidate_tok_s / baseline_tok_s
    se = math.sqrt(va + vb)
    if se == 0:
        return Interval(estimate, estimate, estimate, level)
    df = (va + vb) ** 2 / (va**2 / (xa.size - 1) + vb**2 / (xb.size - 1))
    half = t_quantile(1.0 - (1.0 - level) / 2.0, df) * se
    return Interval(estimate, estimate * math.exp(-half), estimate * math.exp(half), level)
