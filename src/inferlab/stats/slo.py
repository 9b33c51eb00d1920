"""Whether one load point meets a service-level objective: goodput and holds/fails/undecided.

An SLO is a set of limits in ms, key → limit (``config.bench.SLO.limits()``); ``LIMITS`` says
what each key limits. A request is *good* when it succeeded and its own value of every limited
metric is within the limit (a ``_pXX_ms`` key reads the request's own samples at that
percentile: its TTFT, its TPOT, its ITL gaps' p99). **Goodput** is the share of the point's
measured requests that are good, with a Wilson interval.

A distribution limit (``tpot_p99_ms`` ...) also limits the percentile over the point's
requests: it **holds** when the upper bound of the percentile's bootstrap interval (requests
resampled, every limit from the same resample) is within the limit, **fails** when the lower
bound is above it, else is **undecided**. The SLO holds when every limit holds, fails when one
fails. An SLO of per-request limits only has no such state (None).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from inferlab.records import RequestRecord
from inferlab.stats.intervals import QUANTILES, Statistic
from inferlab.stats.perrequest import e2e_samples, itl_ms, tpot_samples, ttft_samples
from inferlab.stats.summary import Interval, percentile

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "LIMITS",
    "LimitCheck",
    "LimitKind",
    "Resampled",
    "SloPoint",
    "SloState",
    "assess_slo",
    "check_limits",
    "resample",
    "wilson",
]

SloState = Literal["holds", "fails", "undecided"]


@dataclass(frozen=True)
class LimitKind:
    """What an SLO key limits: a metric's per-request samples (ms) and, for a distribution
    limit, the percentile over the point (None: each request only)."""

    of: Callable[[RequestRecord], Sequence[float]]
    statistic: Statistic | None = None


#: SLO key → what it limits (one row per key of ``config.bench.SLO``)
LIMITS: Mapping[str, LimitKind] = {
    "ttft_ms": LimitKind(ttft_samples),
    "tpot_ms": LimitKind(tpot_samples),
    "e2e_ms": LimitKind(e2e_samples),
    "ttft_p99_ms": LimitKind(ttft_samples, "p99"),
    "tpot_p50_ms": LimitKind(tpot_samples, "median"),
    "tpot_p99_ms": LimitKind(tpot_samples, "p99"),
    "e2e_p99_ms": LimitKind(e2e_samples, "p99"),
    "itl_p99_ms": LimitKind(itl_ms, "p99"),
}


def check_limits(limits: Mapping[str, float]) -> None:
    """ValueError naming an unknown key or a limit that is not > 0."""
    for key, value in limits.items():
        if key not in LIMITS:
            raise ValueError(f"unknown SLO key {key!r}; known: {', '.join(LIMITS)}")
        if not value > 0:
            raise ValueError(f"SLO {key} must be > 0 ms, got {value}")


@dataclass(frozen=True)
class LimitCheck:
    """One distribution limit at one point: the percentile (ms) and its bootstrap interval."""

    key: str
    limit_ms: float
    value_ms: float
    low_ms: float
    high_ms: float
    state: SloState

    def to_json(self) -> dict[str, JsonValue]:
        return {k: _none_nan(v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class SloPoint:
    """The SLO at one point: ``goodput`` (share of measured requests that met every limit,
    0–1, Wilson interval), ``state`` (None: no distribution limit) and each distribution
    limit's check."""

    slo: str
    good: int
    requests: int
    goodput: Interval
    state: SloState | None
    checks: tuple[LimitCheck, ...]

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "slo": self.slo,
            "good": self.good,
            "requests": self.requests,
            "goodput": self.goodput.to_json(),
            "state": self.state,
            "checks": [c.to_json() for c in self.checks],
        }


def _none_nan(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def wilson(good: int, n: int, level: float = 0.95) -> Interval:
    """The share ``good / n`` with its Wilson score interval (NaN when ``n`` is 0)."""
    from scipy.stats import binomtest  # here: importing scipy.stats costs every bench ~0.5 s

    if n == 0:
        nan = math.nan
        return Interval(nan, nan, nan, level)
    ci = binomtest(good, n).proportion_ci(confidence_level=level, method="wilson")
    return Interval(good / n, float(ci.low), float(ci.high), level)


def _samples(rec: RequestRecord, kind: LimitKind) -> list[float]:
    return list(kind.of(rec)) if rec.ok else []


def _statistic(xs: Sequence[float], statistic: Statistic) -> float:
    return percentile(xs, QUANTILES[statistic])


def _own_value(rec: RequestRecord, kind: LimitKind) -> float | None:
    """The request's own value of what ``kind`` limits (None: it has no sample)."""
    xs = _samples(rec, kind)
    if not xs:
        return None
    return max(xs) if kind.statistic is None else _statistic(xs, kind.statistic)


def _good(rec: RequestRecord, limits: Mapping[str, float]) -> bool:
    if not rec.ok or rec.ttft_ns is None or rec.e2e_ns is None:
        return False
    for key, limit in limits.items():
        v = _own_value(rec, LIMITS[key])
        if v is not None and v > limit:
            return False
    return True


def _flat(records: Sequence[RequestRecord], kind: LimitKind) -> tuple[np.ndarray, np.ndarray]:
    """Every request's samples of ``kind``, sorted, with the index of the request of each."""
    vals: list[float] = []
    owner: list[int] = []
    for i, r in enumerate(records):
        xs = _samples(r, kind)
        vals.extend(xs)
        owner.extend([i] * len(xs))
    v = np.asarray(vals, dtype=float)
    order = np.argsort(v, kind="stable")
    return v[order], np.asarray(owner, dtype=np.int64)[order]


def _weighted_quantile(
    values: np.ndarray, owner: np.ndarray, counts: np.ndarray, q: float
) -> np.ndarray:
    """Per row of ``counts`` (how often each request was drawn): the ``q`` quantile (inverted
    CDF) of the pooled samples of the drawn requests; NaN for a row that drew none."""
    out = np.full(counts.shape[0], np.nan)
    if values.size == 0:
        return out
    step = max(1, 2_000_000 // values.size)
    for s in range(0, counts.shape[0], step):
        w = counts[s : s + step][:, owner]
        cw = np.cumsum(w, axis=1)
        total = cw[:, -1]
        target = np.maximum(1, np.ceil(q * total))
        pos = np.argmax(cw >= target[:, None], axis=1)
        out[s : s + step] = np.where(total > 0, values[pos], np.nan)
    return out


def _draw_counts(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """How often each of ``n`` requests is drawn, per resample of ``n`` draws with
    replacement (a multinomial row, by one bincount: numpy's multinomial loops per row)."""
    if not n:
        return np.zeros((0, 0), dtype=np.int64)
    idx = rng.integers(0, n, size=(resamples, n)) + (np.arange(resamples) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=resamples * n).reshape(resamples, n)


def _replicates(
    records: Sequence[RequestRecord],
    limits: Mapping[str, float],
    resamples: int,
    seed: int,
    offsets: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Bootstrap replicates (ms) of each distribution limit's percentile, all from the same
    resamples of the requests; ``offsets``: a launch's log offset per resample, each
    replicate multiplied by its ``e^offset`` (``stats.capacity_error``)."""
    if offsets is not None and offsets.shape != (resamples,):
        raise ValueError(f"offsets: one per resample ({resamples}), got {offsets.shape}")
    n = len(records)
    rng = np.random.default_rng(seed)
    counts = _draw_counts(rng, n, resamples)
    out = {}
    for key in limits:
        kind = LIMITS[key]
        if kind.statistic is None:
            continue
        values, owner = _flat(records, kind)
        rep = _weighted_quantile(values, owner, counts, QUANTILES[kind.statistic] / 100)
        out[key] = rep if offsets is None else rep * np.exp(offsets)
    return out


def _state(low: float, high: float, limit: float) -> SloState:
    if not (math.isnan(low) or math.isnan(high)):
        if high <= limit:
            return "holds"
        if low > limit:
            return "fails"
    return "undecided"


@dataclass(frozen=True)
class Resampled:
    """A point's measured requests (warm-up and dropped ones left out) under checked SLO
    ``limits`` (key → ms), with the bootstrap replicates (ms) of each distribution limit's
    percentile, all from one set of resamples: ``assess`` and ``margin`` read the same draws."""

    measured: Sequence[RequestRecord]
    limits: Mapping[str, float]
    reps: Mapping[str, np.ndarray]

    def assess(self, level: float = 0.95) -> SloPoint:
        """The SLO at the point; ``level``: each percentile limit's two-sided level."""
        return _point(self.measured, self.limits, level, self.reps)

    def margin(self) -> tuple[float, np.ndarray]:
        """The point's margin, the largest percentile/limit ratio over the distribution
        limits (≤ 1: the SLO holds), and its replicates; ValueError without such a limit."""
        return _margin(self.measured, self.limits, self.reps)


def resample(
    records: Sequence[RequestRecord],
    limits: Mapping[str, float],
    *,
    resamples: int = 1000,
    seed: int = 0,
    offsets: np.ndarray | None = None,
) -> Resampled:
    """``records``' measured requests under ``limits``, resampled ``resamples`` times;
    ``offsets``: a launch term per resample (``_replicates``)."""
    check_limits(limits)
    measured = [r for r in records if r.counted]
    return Resampled(measured, limits, _replicates(measured, limits, resamples, seed, offsets))


def assess_slo(
    records: Sequence[RequestRecord],
    limits: Mapping[str, float],
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
    offsets: np.ndarray | None = None,
) -> SloPoint:
    """The SLO ``limits`` (key → ms) at the point of ``records`` (``resample``, then
    ``Resampled.assess``); see the module docstring."""
    return resample(records, limits, resamples=resamples, seed=seed, offsets=offsets).assess(level)


def _point(
    measured: Sequence[RequestRecord],
    limits: Mapping[str, float],
    level: float,
    reps: Mapping[str, np.ndarray],
) -> SloPoint:
    good = sum(_good(r, limits) for r in measured)
    alpha = (1 - level) / 2
    checks = []
    for key, rep in reps.items():
        kind = LIMITS[key]
        assert kind.statistic is not None
        xs = [x for r in measured for x in _samples(r, kind)]
        value = _statistic(xs, kind.statistic)
        ok = rep[np.isfinite(rep)]
        low, high = (
            (float(np.quantile(ok, alpha)), float(np.quantile(ok, 1 - alpha)))
            if ok.size and len(xs) >= 2
            else (math.nan, math.nan)
        )
        state = _state(low, high, limits[key])
        checks.append(LimitCheck(key, limits[key], value, low, high, state))
    return SloPoint(
        _text(limits),
        good,
        len(measured),
        wilson(good, len(measured), level),
        _overall(checks),
        tuple(checks),
    )


def _text(limits: Mapping[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in sorted(limits.items()))


def _overall(checks: Sequence[LimitCheck]) -> SloState | None:
    """Fails when one limit fails, holds when every one holds; None without any."""
    states = {c.state for c in checks}
    if not checks:
        return None
    return "fails" if "fails" in states else "holds" if states == {"holds"} else "undecided"


def _margin(
    measured: Sequence[RequestRecord],
    limits: Mapping[str, float],
    reps: Mapping[str, np.ndarray],
) -> tuple[float, np.ndarray]:
    if not reps:
        raise ValueError("the SLO has no distribution limit (a _pXX_ms key): no margin")
    point = []
    for key in reps:
        kind = LIMITS[key]
        assert kind.statistic is not None
        xs = [x for r in measured for x in _samples(r, kind)]
        point.append(_statistic(xs, kind.statistic) / limits[key])
    stacked = np.vstack([reps[k] / limits[k] for k in reps])
    return max(point), np.asarray(np.max(stacked, axis=0))
