"""Statistics behind ``inferlab compare``: ratios with intervals, tests, verdicts, saturation.

Pure functions, no I/O. Every ratio is candidate / baseline of the same metric at the same load
point. A change is claimed only when a test on raw samples is significant *and* the ratio clears
a minimum effect *and* its interval excludes 1; anything that goes wrong inside the statistics
yields ``"~"`` with the reason, never a claim. Methods and their justification: docs/compare.md.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from inferlab.stats.dist import _normal_two_sided_p, _t_cdf, t_quantile
from inferlab.stats.metrics import batch_rates
from inferlab.stats.summary import Interval

__all__ = [
    "COMPARABLE_FIELDS",
    "HIGHER_IS_BETTER",
    "Claim",
    "Difference",
    "MannWhitney",
    "QualityWarning",
    "Saturation",
    "Statistic",
    "ThroughputSample",
    "Verdict",
    "batch_rates",
    "check_comparable",
    "compare_samples",
    "compare_throughput",
    "decide",
    "find_saturation",
    "mann_whitney_u",
    "min_attainable_p",
    "min_samples",
    "permutation_test",
    "quality_warnings",
    "sample_ratio",
    "t_quantile",
    "throughput_ratio_batches",
    "throughput_ratio_trials",
    "welch_t_test",
]

Claim = Literal["better", "worse", "~"]
Statistic = Literal["mean", "median", "p90", "p95", "p99"]

#: metric name (as in ``PointSummary``) → True when a higher value is better
HIGHER_IS_BETTER: Mapping[str, bool] = MappingProxyType(
    {
        "output_tok_s": True,
        "total_tok_s": True,
        "request_s": True,
        "goodput_req_s": True,
        "user_tok_s": True,
        "ttft_ms": False,
        "tpot_ms": False,
        "itl_ms": False,
        "icl_ms": False,
        "e2e_ms": False,
    }
)

#: fields that must match (or be missing on both sides) for a delta to mean anything
COMPARABLE_FIELDS = (
    "model",
    "gpu_name",
    "gpu_count",
    "engine_version",
    "workload_hash",
    "metrics_version",
)

_QUANTILE: Mapping[str, float] = MappingProxyType(
    {"median": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
)
_NAN_INTERVAL_LEVEL = 0.95
_EXACT_LIMIT = 20_000  # enumerate every split up to this many; Monte Carlo above
_CHUNK_ELEMENTS = 4_000_000  # bootstrap work array size (float64: 32 MB)


# ---------------------------------------------------------------------------------------
# value classes


@dataclass(frozen=True, slots=True)
class Verdict:
    """One comparison cell: ratio candidate/baseline with its interval, the test's p-value,
    and the claim ("better" / "worse" for the metric's direction, "~" within noise)."""

    ratio: Interval
    p_value: float | None
    claim: Claim
    reason: str

    def to_json(self) -> dict[str, Any]:
        p = self.p_value
        return {
            "ratio": self.ratio.to_json(),
            "p_value": None if p is None or math.isnan(p) else p,
            "claim": self.claim,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class MannWhitney:
    """Mann–Whitney U of ``a`` (count of pairs with a > b, ties ½), its normal-approximation
    z (tie- and continuity-corrected) and the two-sided p-value."""

    u: float
    z: float
    p_value: float


@dataclass(frozen=True, slots=True)
class ThroughputSample:
    """Throughput of one config at one load point, tok/s: one value per trial; with a single
    trial, ``batch_rates`` holds the rates of equal slices of its window (``batch_rates()``)."""

    trials: tuple[float, ...]
    batch_rates: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class Difference:
    """A field that differs between two runs (``None``: missing on that side)."""

    field: str
    a: Any
    b: Any

    def __str__(self) -> str:
        return f"{self.field}: {self.a!r} vs {self.b!r}"


@dataclass(frozen=True, slots=True)
class Saturation:
    """Where one config's output throughput stops growing with concurrency.

    ``saturated_at`` is the first concurrency after which throughput grows < ``min_gain``
    while TPOT grows; ``next_concurrency`` is the point that shows it, with its relative
    throughput gain and TPOT growth (0.026 = +2.6%). ``None`` when not saturated."""

    saturated_at: int | None
    next_concurrency: int | None
    throughput_gain: float | None
    tpot_growth: float | None
    max_concurrency: int | None
    sentence: str


@dataclass(frozen=True, slots=True)
class QualityWarning:
    """A measurement-quality problem and the fix that removes it."""

    kind: str  # too-few-samples | too-few-trials | unstable-trials | client-lag | ...
    message: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


# ---------------------------------------------------------------------------------------
# tests


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Two-sided Mann–Whitney U test (normal approximation with tie and continuity
    correction, as scipy's ``method="asymptotic"``). Unit-free; p = 1 when every value ties.
    Raises ValueError on an empty side or NaN."""
    x = _finite_array(a, "first sample")
    y = _finite_array(b, "second sample")
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
    x = _finite_array(a, "first sample")
    y = _finite_array(b, "second sample")
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
    chunk = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, resamples, chunk):
        k = min(chunk, resamples - start)
        perm = rng.permuted(np.broadcast_to(pooled, (k, n)), axis=1)
        hits += int(np.count_nonzero(diffs(perm[:, :n1].sum(axis=1)) >= obs - eps))
    return (1.0 + hits) / (1.0 + resamples)


# ---------------------------------------------------------------------------------------
# ratios


def _finite_array(samples: Sequence[float], what: str) -> np.ndarray:
    arr = np.asarray(samples, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{what} is empty")
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ValueError(f"{what} has {bad} NaN/infinite value(s)")
    return arr


def _trials_arrays(trials: Sequence[Sequence[float]], what: str) -> list[np.ndarray]:
    if len(trials) == 0:
        raise ValueError(f"{what} has no trials")
    out = [_finite_array(t, f"{what} trial {i + 1}") for i, t in enumerate(trials)]
    total = sum(t.size for t in out)
    if total < 2:
        raise ValueError(f"{what} has {total} sample(s); an interval needs at least 2")
    return out


def _reduce(statistic: Statistic) -> Callable[[np.ndarray], np.ndarray]:
    """Row-wise statistic of a 2-D array (quantiles: linear interpolation, numpy's default)."""
    if statistic == "mean":
        return lambda v: v.mean(axis=1)
    if statistic not in _QUANTILE:
        raise ValueError(f"unknown statistic {statistic!r}; known: mean, {', '.join(_QUANTILE)}")
    q = _QUANTILE[statistic] / 100.0

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
    q = _QUANTILE[statistic] / 100.0
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
    fn = _reduce(statistic)
    out = np.empty(resamples)
    chunk = max(1, _CHUNK_ELEMENTS // (k * nmax))
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
    return float(_reduce(statistic)(np.concatenate(trials)[None, :])[0])


def _percentile_interval(
    estimate: float, replicates: np.ndarray, level: float, what: str
) -> Interval:
    bad = int(np.count_nonzero(~np.isfinite(replicates)))
    if bad:
        raise ValueError(
            f"{bad} of {replicates.size} bootstrap ratios are undefined ({what} is 0 in some "
            "resamples)"
        )
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(replicates, [alpha, 1.0 - alpha])
    return Interval(estimate, float(low), float(high), level)


def _check_level(level: float) -> None:
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
    _check_level(level)
    base = _trials_arrays(baseline, "baseline")
    cand = _trials_arrays(candidate, "candidate")
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
    return _percentile_interval(estimate, ratios, level, f"the baseline {statistic}")


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
    _check_level(level)
    x = _finite_array(baseline, "baseline trials")
    y = _finite_array(candidate, "candidate trials")
    if x.size < 2 or y.size < 2:
        raise ValueError(f"a bootstrap over trials needs ≥ 2 per side, got {x.size} and {y.size}")
    if x.mean() <= 0:
        raise ValueError("the baseline throughput is 0; a ratio is undefined")
    rng = np.random.default_rng(seed)
    mb = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    mc = y[rng.integers(0, y.size, size=(resamples, y.size))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = mc / mb
    return _percentile_interval(
        float(y.mean() / x.mean()), ratios, level, "the baseline throughput"
    )


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
    _check_level(level)
    xa = _finite_array(baseline_batches, "baseline batch rates")
    xb = _finite_array(candidate_batches, "candidate batch rates")
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


def _nan_interval(level: float = _NAN_INTERVAL_LEVEL) -> Interval:
    return Interval(math.nan, math.nan, math.nan, level)


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def decide(
    ratio: Interval,
    p_value: float | None,
    *,
    higher_is_better: bool,
    alpha: float = 0.05,
    min_effect: float = 0.02,
) -> Verdict:
    """The decision rule: "better"/"worse" only when p < ``alpha`` AND |ratio − 1| ≥
    ``min_effect`` (0.02 = 2%) AND the interval excludes 1 on the estimate's side."""
    if not 0.0 < alpha < 1.0 or min_effect < 0:
        raise ValueError(f"need 0 < alpha < 1 and min_effect ≥ 0, got {alpha}, {min_effect}")
    est, low, high = ratio.estimate, ratio.low, ratio.high
    if not all(math.isfinite(v) for v in (est, low, high)):
        return Verdict(ratio, p_value, "~", "no verdict: the ratio or its interval is undefined")
    if p_value is None or not math.isfinite(p_value):
        return Verdict(ratio, p_value, "~", "no verdict: no p-value")
    ci = f"{ratio.level:.0%} CI {_pct(low - 1)} … {_pct(high - 1)}"
    if p_value >= alpha:
        return Verdict(
            ratio, p_value, "~", f"within noise: {_pct(est - 1)}, p = {p_value:.2g} ≥ {alpha:g}"
        )
    if low <= 1.0 <= high:
        return Verdict(ratio, p_value, "~", f"within noise: {_pct(est - 1)}, {ci} includes 0")
    if (est > 1.0) != (low > 1.0):
        return Verdict(ratio, p_value, "~", f"no verdict: estimate {est:.4g} lies outside {ci}")
    if abs(est - 1.0) < min_effect:
        return Verdict(
            ratio,
            p_value,
            "~",
            f"below the minimum effect: {_pct(est - 1)} (|change| < {min_effect:.0%}), "
            f"although p = {p_value:.2g}",
        )
    claim: Claim = "better" if (est > 1.0) == higher_is_better else "worse"
    return Verdict(ratio, p_value, claim, f"{_pct(est - 1)} ({ci}), p = {p_value:.2g}")


def _direction(metric: str) -> bool:
    try:
        return HIGHER_IS_BETTER[metric]
    except KeyError:
        known = ", ".join(sorted(HIGHER_IS_BETTER))
        raise ValueError(f"unknown metric {metric!r}; known: {known}") from None


def _failed(exc: Exception, ratio: Interval | None = None, p: float | None = None) -> Verdict:
    if isinstance(exc, ValueError):
        reason = f"no verdict: {exc}"
    else:
        reason = f"no verdict: the statistics failed ({type(exc).__name__}: {exc})"
    return Verdict(ratio or _nan_interval(), p, "~", reason)


def compare_samples(
    metric: str,
    baseline: Sequence[Sequence[float]],
    candidate: Sequence[Sequence[float]],
    *,
    statistic: Statistic = "median",
    alpha: float = 0.05,
    min_effect: float = 0.02,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Verdict:
    """Verdict for a per-request metric (``tpot_ms``, ``ttft_ms``, ``e2e_ms``, ``itl_ms``,
    ``user_tok_s``...), each side a list of trials of raw samples: ratio of ``statistic``
    (``sample_ratio``) and a Mann–Whitney U test on the pooled requests."""
    higher = _direction(metric)
    _reduce(statistic)  # an unknown statistic is the caller's mistake: raise, don't "~"
    ratio: Interval | None = None
    try:
        ratio = sample_ratio(
            baseline, candidate, statistic=statistic, level=level, resamples=resamples, seed=seed
        )
        pooled_b = [float(v) for t in baseline for v in t]
        pooled_c = [float(v) for t in candidate for v in t]
        p = mann_whitney_u(pooled_b, pooled_c).p_value
    except Exception as exc:
        return _failed(exc, ratio)
    return decide(ratio, p, higher_is_better=higher, alpha=alpha, min_effect=min_effect)


def compare_throughput(
    baseline: ThroughputSample,
    candidate: ThroughputSample,
    *,
    metric: str = "output_tok_s",
    alpha: float = 0.05,
    min_effect: float = 0.02,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Verdict:
    """Verdict for a throughput (tok/s or req/s, one value per trial). ≥ 2 trials per side:
    bootstrap over trials and a permutation test on the trial values. One trial per side:
    batch-means interval (``throughput_ratio_batches``) and a permutation test on the batch
    rates. Any other shape is "~" with the reason."""
    higher = _direction(metric)
    ratio: Interval | None = None
    try:
        na, nb = len(baseline.trials), len(candidate.trials)
        if na >= 2 and nb >= 2:
            ratio = throughput_ratio_trials(
                baseline.trials, candidate.trials, level=level, resamples=resamples, seed=seed
            )
            floor = min_attainable_p(na, nb)
            if floor < alpha:
                p = permutation_test(baseline.trials, candidate.trials, seed=seed)
                how = "permutation test on trial values"
            else:
                # too few trials for any permutation test to reach alpha: a trial's throughput
                # is a mean over thousands of tokens, close to normal, so Welch's t applies
                p = welch_t_test(baseline.trials, candidate.trials)
                how = f"Welch t-test on trial values ({na} vs {nb} trials)"
            verdict = decide(ratio, p, higher_is_better=higher, alpha=alpha, min_effect=min_effect)
            return Verdict(
                verdict.ratio, verdict.p_value, verdict.claim, f"{verdict.reason} [{how}]"
            )
        if na == 1 and nb == 1:
            if not baseline.batch_rates or not candidate.batch_rates:
                raise ValueError("one trial per side and no batch rates: no interval possible")
            ratio = throughput_ratio_batches(
                baseline.trials[0],
                baseline.batch_rates,
                candidate.trials[0],
                candidate.batch_rates,
                level=level,
            )
            p = permutation_test(baseline.batch_rates, candidate.batch_rates, seed=seed)
            return decide(ratio, p, higher_is_better=higher, alpha=alpha, min_effect=min_effect)
        raise ValueError(
            f"baseline has {na} trial(s), candidate {nb}: need ≥ 2 on both sides, or 1 on both "
            "with batch rates"
        )
    except Exception as exc:
        return _failed(exc, ratio)


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


def _trials_needed(alpha: float) -> int:
    n = 2
    while min_attainable_p(n, n) >= alpha and n < 50:
        n += 1
    return n


# ---------------------------------------------------------------------------------------
# comparability


def check_comparable(
    a: Mapping[str, Any], b: Mapping[str, Any], fields: Sequence[str] = COMPARABLE_FIELDS
) -> list[Difference]:
    """The fields whose values differ; empty means comparable. A field missing (absent or
    None) on both sides is not a difference; missing on one side is."""
    out: list[Difference] = []
    for f in fields:
        va, vb = a.get(f), b.get(f)
        if va is None and vb is None:
            continue
        if va is None or vb is None or va != vb:
            out.append(Difference(f, va, vb))
    return out


# ---------------------------------------------------------------------------------------
# saturation


def find_saturation(
    points: Sequence[tuple[int, float, float]], *, min_gain: float = 0.05
) -> Saturation:
    """Given ``(concurrency, output tok/s, median TPOT ms)`` per load point of one config, the
    first concurrency C after which no higher point gains ≥ ``min_gain`` (0.05 = 5%) tok/s
    while TPOT grows at the next point. Points with a non-finite or non-positive value are
    ignored."""
    pts = sorted(
        (int(c), float(t), float(p))
        for c, t, p in points
        if math.isfinite(t) and math.isfinite(p) and t > 0 and p > 0
    )
    if not pts:
        return Saturation(None, None, None, None, None, "no usable load points")
    top = pts[-1][0]
    for i in range(len(pts) - 1):
        c, tput, tpot = pts[i]
        c2, tput2, tpot2 = pts[i + 1]
        best_later = max(t for _, t, _ in pts[i + 1 :])
        if best_later < tput * (1.0 + min_gain) and tpot2 > tpot:
            gain, growth = tput2 / tput - 1.0, tpot2 / tpot - 1.0
            sentence = f"saturated by C={c}: C={c2} gives {_pct(gain)} tok/s at {_pct(growth)} TPOT"
            return Saturation(c, c2, gain, growth, top, sentence)
    if len(pts) == 1:
        return Saturation(None, None, None, None, top, f"one load point (C={top}): cannot tell")
    return Saturation(None, None, None, None, top, f"not saturated up to C={top}")


# ---------------------------------------------------------------------------------------
# measurement quality


def min_samples(statistic: Statistic) -> int:
    """Fewest samples for a usable interval of ``statistic``: 10, and for a pq percentile at
    least 1/(1 − q) so it is not just the maximum (p95: 20, p99: 100)."""
    q = _QUANTILE.get(statistic, 50.0) / 100.0
    return max(10, math.ceil(round(1.0 / (1.0 - q), 9)))


def quality_warnings(
    *,
    samples: int | None = None,
    statistic: Statistic = "median",
    trial_tok_s: Sequence[float] = (),
    trials_per_side: int | None = None,
    alpha: float = 0.05,
    lag_p99_ms: float | None = None,
    length_mismatches: int = 0,
    errors: int | Mapping[str, int] = 0,
    requests: int | None = None,
    cv_limit: float = 0.05,
    lag_limit_ms: float = 1.0,
) -> list[QualityWarning]:
    """Warnings for one load point of one config; every argument is optional. ``samples``:
    requests behind ``statistic``; ``trial_tok_s``: throughput per trial (tok/s);
    ``lag_p99_ms``: the client's loop-lag p99 (ms); ``errors``: count or counts by kind."""
    out: list[QualityWarning] = []
    if samples is not None:
        need = min_samples(statistic)
        if samples < need:
            out.append(
                QualityWarning(
                    "too-few-samples",
                    f"the {statistic} rests on {samples} request(s); its interval needs ≥ {need}",
                    f"measure ≥ {need} requests per load point (--requests {need}, or a longer "
                    "--duration)",
                )
            )
    if trials_per_side is not None and trials_per_side >= 2:
        floor = min_attainable_p(trials_per_side, trials_per_side)
        if floor >= alpha:
            need_t = _trials_needed(alpha)
            out.append(
                QualityWarning(
                    "too-few-trials",
                    f"with {trials_per_side} trials per side no permutation test can reach "
                    f"p < {alpha:g} (smallest possible p = {floor:.2g}): throughput verdicts "
                    "rest on Welch's t, which assumes normal trial throughputs",
                    f"run --trials {need_t} or more for a distribution-free test",
                )
            )
    vals = [v for v in trial_tok_s if math.isfinite(v)]
    if len(vals) >= 2:
        mean = sum(vals) / len(vals)
        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
        if mean > 0 and sd / mean > cv_limit:
            out.append(
                QualityWarning(
                    "unstable-trials",
                    f"throughput varies {sd / mean:.1%} (sd/mean) across {len(vals)} trials, "
                    f"more than {cv_limit:.0%}",
                    "look for interference (other jobs on the GPUs, clock or thermal "
                    "throttling), add warmup (--warmup), lengthen each trial (--requests), "
                    "or run more --trials",
                )
            )
    if lag_p99_ms is not None and lag_p99_ms > lag_limit_ms:
        out.append(
            QualityWarning(
                "client-lag",
                f"the client ran late: loop-lag p99 {lag_p99_ms:.2f} ms > {lag_limit_ms:g} ms",
                "give the client CPUs of its own ([load] client_cpus, bench --client-cpus), "
                "add --workers, lower the concurrency, or run the client on another host",
            )
        )
    if length_mismatches > 0:
        out.append(
            QualityWarning(
                "length-mismatch",
                f"{length_mismatches} request(s) returned a different number of output tokens "
                "than requested; configs may not have done the same work",
                "force the length (--engine vllm|sglang sends ignore_eos and min_tokens) or "
                "check the server's max length",
            )
        )
    n_err = sum(errors.values()) if isinstance(errors, Mapping) else errors
    if n_err > 0:
        kinds = (
            " (" + ", ".join(f"{k} {v}" for k, v in sorted(errors.items()) if v) + ")"
            if isinstance(errors, Mapping)
            else ""
        )
        of = f" of {requests}" if requests is not None else ""
        out.append(
            QualityWarning(
                "errors",
                f"{n_err}{of} request(s) failed{kinds}; they are excluded from latency, and "
                "throughput counts only successful requests",
                "see the request records for the server's messages; fix them before comparing",
            )
        )
    return out
