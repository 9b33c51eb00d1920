"""Distribution summaries and bootstrap intervals: pure functions over raw samples."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "Distribution",
    "Figures",
    "Interval",
    "bootstrap_ci",
    "describe",
    "json_fields",
    "percentile",
]


def json_fields(obj: object) -> dict[str, JsonValue]:
    """A dataclass's fields as JSON, in their order: a NaN float as None (JSON has no NaN), a
    field that has ``to_json`` (an ``Interval``) by it, any other value as it is."""
    if not is_dataclass(obj):
        raise TypeError(f"{type(obj).__name__} is not a dataclass")
    out: dict[str, JsonValue] = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if hasattr(v, "to_json"):
            v = v.to_json()
        out[f.name] = None if isinstance(v, float) and math.isnan(v) else v
    return out


class Figures:
    """The base of a dataclass of figures whose JSON is its fields (``json_fields``)."""

    __slots__ = ()

    def to_json(self) -> dict[str, JsonValue]:
        return json_fields(self)


@dataclass(frozen=True, slots=True)
class Distribution(Figures):
    """Summary of samples (in the unit of the samples). Empty: count 0 and NaNs."""

    count: int
    mean: float
    std: float  # sample standard deviation (ddof=1); 0 for one sample
    min: float
    p50: float
    p90: float
    p95: float
    p99: float
    max: float

    @property
    def median(self) -> float:
        return self.p50


@dataclass(frozen=True, slots=True)
class Interval(Figures):
    """A point estimate with its confidence interval (``level``, e.g. 0.95)."""

    estimate: float
    low: float
    high: float
    level: float


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100), linear interpolation between order statistics
    (numpy's default, R type 7). NaN when empty."""
    if len(samples) == 0:
        return math.nan
    return float(np.percentile(np.asarray(samples, dtype=float), q))


def describe(samples: Sequence[float]) -> Distribution:
    """Count, mean, sample std, min, p50/p90/p95/p99 (linear interpolation), max."""
    n = len(samples)
    if n == 0:
        nan = math.nan
        return Distribution(0, nan, nan, nan, nan, nan, nan, nan, nan)
    a = np.asarray(samples, dtype=float)
    p50, p90, p95, p99 = (float(x) for x in np.percentile(a, [50, 90, 95, 99]))
    return Distribution(
        count=n,
        mean=float(a.mean()),
        std=float(a.std(ddof=1)) if n > 1 else 0.0,
        min=float(a.min()),
        p50=p50,
        p90=p90,
        p95=p95,
        p99=p99,
        max=float(a.max()),
    )


def bootstrap_ci(
    samples: Sequence[float],
    statistic: Callable[[np.ndarray], np.ndarray] | str = "mean",
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Percentile-bootstrap interval of ``statistic`` ("mean", "median" or a function taking
    a 2-D array of resamples and reducing along axis 1). Deterministic for a given seed.
    NaN bounds when there are fewer than 2 samples."""
    a = np.asarray(samples, dtype=float)
    if isinstance(statistic, str):
        fn: Callable[[np.ndarray], np.ndarray] = {
            "mean": lambda x: x.mean(axis=1),
            "median": lambda x: np.median(x, axis=1),
        }[statistic]
    else:
        fn = statistic
    if a.size == 0:
        return Interval(math.nan, math.nan, math.nan, level)
    est = float(fn(a[None, :])[0])
    if a.size < 2:
        return Interval(est, math.nan, math.nan, level)
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    chunk = max(1, min(resamples, 2_000_000 // a.size))
    for start in range(0, resamples, chunk):
        k = min(chunk, resamples - start)
        idx = rng.integers(0, a.size, size=(k, a.size))
        stats[start : start + k] = fn(a[idx])
    alpha = (1 - level) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return Interval(est, float(low), float(high), level)
