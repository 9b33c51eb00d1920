"""Adaptive stopping of one load point: is its estimate precise enough to stop measuring?

The primary metrics of a closed-loop point are the median TPOT (from its requests) and the
output throughput (from time windows). Requests of one point are not independent — the ones in
flight together share the server's batches — so neither interval treats them as such:

- median TPOT: a **moving-block bootstrap** over the requests in send order, with blocks of
  about C requests (those that overlap in time), at least ∛n and at most n/10 so there are
  ≥ 10 blocks; percentile interval, and the standard error of the log median for z-tests;
- throughput: **non-overlapping batch means** over the steady window (20 equal slices, each
  slice's tokens / its length, a request's tokens spread evenly between its first and last
  token event); the interval is mean ± t·sd/√k, with the variance inflated by
  (1 + r)/(1 − r) when the lag-1 autocorrelation r of the batch rates (bias-corrected by
  (1 + 3r)/k) is positive: slices too short to be independent; r is reported.

Checks run on a sparse geometric schedule (every ×1.5 requests from ``min_requests``), never
after every request, and a point stops only when two checks in a row are precise: stopping the
first time an interval happens to look narrow lowers its coverage. Pure functions;
docs/metrics.md states the rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from inferlab.records import RequestRecord

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "BATCHES",
    "BatchMeans",
    "MedianCI",
    "Precision",
    "StopRecord",
    "batch_means",
    "block_bootstrap_median",
    "block_length",
    "check_schedule",
    "event_batch_rates",
    "precision_of",
    "request_span_rates",
    "span_batch_rates",
]

BATCHES = 20
CHECK_FACTOR = 1.5
_RESAMPLES = 1000
_MAX_LAG1 = 0.9


def check_schedule(min_requests: int, max_requests: int, factor: float = CHECK_FACTOR) -> list[int]:
    """Request counts at which to check: min, ×factor, ... and the cap (0: no cap)."""
    if min_requests < 1 or factor <= 1.0:
        raise ValueError("need min_requests ≥ 1 and factor > 1")
    out: list[int] = []
    n = min_requests
    limit = max_requests or 10**9
    while n < limit and len(out) < 60:
        out.append(n)
        n = max(n + 1, math.ceil(n * factor))
    if max_requests:
        out.append(max_requests)
    return out


def _rel_half_width(center: float, low: float, high: float) -> float:
    """Half the interval's width over its (positive) center; inf when the center is ≤ 0."""
    return (high - low) / 2.0 / center if center > 0 else math.inf


@dataclass(frozen=True, slots=True)
class BatchMeans:
    """Mean of batch rates (tok/s) with its 95% interval; ``lag1`` their lag-1
    autocorrelation, ``se_rel`` the relative standard error (inflated when lag1 > 0)."""

    mean: float
    low: float
    high: float
    batches: int
    lag1: float
    se_rel: float

    @property
    def rel_half_width(self) -> float:
        return _rel_half_width(self.mean, self.low, self.high)


def batch_means(rates: Sequence[float], level: float = 0.95) -> BatchMeans:
    """Batch-means interval of the mean of ``rates`` (≥ 2), autocorrelation-inflated."""
    from scipy import stats  # here: importing scipy costs about 1 s on 2 CPUs

    x = np.asarray(rates, dtype=float)
    k = x.size
    if k < 2:
        raise ValueError(f"batch means need ≥ 2 batches, got {k}")
    mean = float(x.mean())
    d = x - mean
    ss = float(np.sum(d * d))
    r1 = float(np.sum(d[:-1] * d[1:]) / ss) if ss > 0 else 0.0
    # r1 of k values is biased low by about (1 + 3r)/k (Kendall): correct before inflating
    r = min(max(r1 + (1.0 + 3.0 * r1) / k, 0.0), _MAX_LAG1)
    var = ss / (k - 1) * (1.0 + r) / (1.0 - r)
    se = math.sqrt(var / k)
    half = float(stats.t.ppf(0.5 + level / 2.0, k - 1)) * se
    se_rel = se / mean if mean > 0 else math.inf
    return BatchMeans(mean, mean - half, mean + half, k, r1, se_rel)


def event_batch_rates(
    times_ns: Sequence[int], tokens: Sequence[int], t0: int, t1: int, batches: int = BATCHES
) -> list[float]:
    """Tokens per second in each of ``batches`` equal slices of [t0, t1), counting each token
    event where it arrived; events outside the window are left out."""
    if t1 <= t0:
        return []
    t = np.asarray(times_ns, dtype=np.int64)
    w = np.asarray(tokens, dtype=float)
    counts, _ = np.histogram(t, bins=np.linspace(t0, t1, batches + 1), weights=w)
    width_s = (t1 - t0) / 1e9 / batches
    return [float(c) / width_s for c in counts]


def span_batch_rates(
    first_ns: Sequence[int],
    last_ns: Sequence[int],
    tokens: Sequence[int],
    t0: int,
    t1: int,
    batches: int = BATCHES,
) -> list[float]:
    """Like ``event_batch_rates`` when only each request's first and last token times are
    known: one token at the first, the other ``tokens − 1`` spread evenly up to the last."""
    if t1 <= t0:
        return []
    a = np.asarray(first_ns, dtype=float)[:, None]
    b = np.asarray(last_ns, dtype=float)[:, None]
    n = np.asarray(tokens, dtype=float)[:, None]
    edges = np.linspace(t0, t1, batches + 1)[None, :]
    span = np.maximum(b - a, 1.0)
    cum = (edges >= a) * 1.0 + (n - 1.0) * np.clip((edges - a) / span, 0.0, 1.0)
    cum = np.where(b <= a, (edges >= a) * n, cum)
    counts = np.diff(cum, axis=1).sum(axis=0)
    width_s = (t1 - t0) / 1e9 / batches
    return [float(c) / width_s for c in counts]


def request_span_rates(
    records: Sequence[RequestRecord], t0: int, t1: int, batches: int = BATCHES
) -> list[float]:
    """``span_batch_rates`` of the successful, non-warmup records: each request's tokens
    spread between its first and last token event, so a slice measures the rate and not
    where the server's decode steps happen to fall (slices that cut steps unevenly would
    add aliasing, not sampling, noise)."""
    ok = [r for r in records if not r.warmup and r.ok and r.event_ns]
    return span_batch_rates(
        [r.event_ns[0] for r in ok],
        [r.event_ns[-1] for r in ok],
        [r.output_tokens for r in ok],
        t0,
        t1,
        batches,
    )


@dataclass(frozen=True, slots=True)
class MedianCI:
    """Median with its block-bootstrap 95% interval; ``se_log``: standard error of its log."""

    median: float
    low: float
    high: float
    block: int
    se_log: float

    @property
    def rel_half_width(self) -> float:
        return _rel_half_width(self.median, self.low, self.high)


def block_length(n: int, concurrency: int) -> int:
    """About C requests (those in flight together), ≥ ∛n, and ≤ n/10 (so ≥ 10 blocks)."""
    return int(max(1, min(max(concurrency, math.ceil(n ** (1.0 / 3.0))), n // 10)))


def block_bootstrap_median(
    values: Sequence[float],
    block: int,
    *,
    level: float = 0.95,
    resamples: int = _RESAMPLES,
    seed: int = 0,
) -> MedianCI:
    """Moving-block bootstrap of the median of ``values`` (in time order): each resample
    strings random blocks of ``block`` consecutive values together up to n."""
    x = np.asarray(values, dtype=float)
    n = x.size
    if n < 2:
        raise ValueError(f"a median interval needs ≥ 2 values, got {n}")
    block = max(1, min(block, n))
    rng = np.random.default_rng(seed)
    m = math.ceil(n / block)
    starts = rng.integers(0, n - block + 1, size=(resamples, m))
    idx = (starts[:, :, None] + np.arange(block)[None, None, :]).reshape(resamples, -1)[:, :n]
    reps = np.median(x[idx], axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = (float(v) for v in np.quantile(reps, [alpha, 1.0 - alpha]))
    pos = reps[reps > 0]
    se_log = float(np.std(np.log(pos), ddof=1)) if pos.size == reps.size else math.inf
    return MedianCI(float(np.median(x)), low, high, block, se_log)


@dataclass(frozen=True, slots=True)
class Precision:
    """What a check found: the intervals of both primary metrics (None: not computable)."""

    n: int
    tpot: MedianCI | None
    throughput: BatchMeans | None

    def half_widths(self) -> dict[str, float | None]:
        """Relative half-widths (0.05 = ±5%) per metric."""
        return {
            "tpot_ms": _finite(self.tpot.rel_half_width) if self.tpot else None,
            "output_tok_s": _finite(self.throughput.rel_half_width) if self.throughput else None,
        }

    def reached(self, precision: float) -> bool:
        hw = self.half_widths()
        return all(v is not None and v <= precision for v in hw.values())


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def precision_of(
    tpots: Sequence[float], rates: Sequence[float], concurrency: int, *, seed: int = 0
) -> Precision:
    """Both intervals from TPOTs in send order (ms) and batch rates (tok/s)."""
    tpot = None
    if len(tpots) >= 2:
        tpot = block_bootstrap_median(tpots, block_length(len(tpots), concurrency), seed=seed)
    tput = batch_means(rates) if len(rates) >= 2 else None
    return Precision(len(tpots), tpot, tput)


@dataclass
class StopRecord:
    """Why an adaptive point stopped and how precise it got (stored as ``runs.stop_json``).

    ``reason``: precision | cap | duration | interrupted | sequential-<verdict>, or the reason
    of another registered rule (``load.adaptive.STOPPING_RULES``);
    ``half_width``: achieved relative half-widths of the final, exact intervals."""

    reason: str
    requests: int  # counted: neither warmup, ramp-up nor drain
    ramp_up: int
    drain: int
    precision: float | None
    half_width: dict[str, float | None]
    window_ns: tuple[int, int] | None  # the steady window throughput is measured over
    lag1: float | None = None
    batches: int = BATCHES
    block: int | None = None
    checks: list[int] = field(default_factory=list)
    look: int | None = None
    looks: int | None = None
    sequential: dict[str, Any] | None = None

    def to_json(self) -> dict[str, JsonValue]:
        out = {k: v for k, v in self.__dict__.items() if v is not None}
        if self.window_ns is not None:
            out["window_ns"] = list(self.window_ns)
        return out
