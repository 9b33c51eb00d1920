"""Adaptive stopping of a closed-loop load point, in the parent while the workers measure.

Workers stream light summaries (``load.progress``); ``AdaptiveMonitor`` keeps them and, on a
sparse schedule, decides whether the point may stop:

- alone (``requests = "auto"``): at request counts min, ×1.5, ... it computes the 95% intervals
  of the median TPOT and the output throughput (``stats.stopping``) and stops when both are
  within ±precision, or at the cap / duration;
- against a stored baseline (sequential A/B): at planned looks (k/K of ``max_requests``) it
  tests each primary metric with a Lan–DeMets O'Brien–Fleming boundary
  (``stats.sequential``) and stops when every metric is settled (better, worse, or
  equivalent within ±min_effect), or at the last look.

The first request of every user (the ramp-up) never enters a check.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inferlab.load.progress import LightRecord
from inferlab.records import RequestRecord
from inferlab.stats.metrics import METRICS, tpot_ms
from inferlab.stats.sequential import decide_look, ld_obrien_fleming, spending_boundaries
from inferlab.stats.stopping import (
    BatchMeans,
    MedianCI,
    Precision,
    batch_means,
    block_bootstrap_median,
    block_length,
    check_schedule,
    precision_of,
    request_span_rates,
    span_batch_rates,
)

__all__ = ["AdaptiveMonitor", "AdaptivePlan", "BaselineRef", "baseline_ref", "look_counts"]


@dataclass(frozen=True)
class BaselineRef:
    """A stored baseline point a candidate is tested against: its median TPOT and its
    throughput, each with the standard error of its log."""

    config: str
    tpot: MedianCI
    throughput: BatchMeans


@dataclass(frozen=True)
class AdaptivePlan:
    precision: float
    min_requests: int
    max_requests: int  # 0: no cap
    max_duration_s: float | None
    concurrency: int
    seed: int = 0
    baseline: BaselineRef | None = None  # sequential A/B against it
    looks: int = 4
    min_effect: float = 0.02
    alpha: float = 0.05
    stop_on_precision: bool = True  # False: measure to the cap (a reference for sequential A/B)


def look_counts(max_requests: int, looks: int) -> list[int]:
    """Requests at each planned look: k/K of the cap."""
    return [math.ceil(max_requests * k / looks) for k in range(1, looks + 1)]


def _window(
    records: Sequence[LightRecord], inflight: dict[int, int | None], c: int
) -> tuple[int, int] | None:
    """[end of the ramp-up, earliest send still in flight): tokens in it are all reported."""
    ramp = [r for r in records if r.ramp]
    if len(ramp) < c:
        return None
    w0 = max(r.end_ns for r in ramp)
    open_ = [t for t in inflight.values() if t is not None]
    w1 = min(open_) if open_ else max(r.end_ns for r in records)
    return (w0, w1) if w1 > w0 else None


def _precision(
    records: Sequence[LightRecord], window: tuple[int, int] | None, c: int, seed: int
) -> Precision:
    counted = sorted((r for r in records if not r.ramp), key=lambda r: r.send_ns)
    tpots = [t for t in (r.tpot_ms for r in counted) if t is not None]
    rates: list[float] = []
    if window is not None:
        good = [r for r in records if r.ok]
        rates = span_batch_rates(
            [r.first_ns for r in good],
            [r.last_ns for r in good],
            [r.tokens for r in good],
            *window,
        )
    return precision_of(tpots, rates, c, seed=seed)


@dataclass
class AdaptiveMonitor:
    """A ``load.phase.PhaseMonitor`` for one adaptive point (see the module docstring)."""

    plan: AdaptivePlan
    started_ns: int = field(default_factory=time.perf_counter_ns)
    records: list[LightRecord] = field(default_factory=list)
    inflight: dict[int, int | None] = field(default_factory=dict)
    reason: str | None = None
    checks: list[int] = field(default_factory=list)
    look: int | None = None
    sequential: dict[str, Any] | None = None
    counted: int = 0  # finished requests that are not ramp-up
    _reached: bool = False  # the previous check was precise enough
    _next: int = 0
    _info: dict[str, list[float]] = field(default_factory=dict)

    def progress(self, worker: int, payload: Any) -> None:
        recs, inflight_min = payload
        self.records.extend(recs)
        self.counted += sum(1 for r in recs if not r.ramp)
        self.inflight[worker] = inflight_min

    def should_finish(self, done: int) -> bool:
        """``done``: requests finished so far (the workers' shared counters, exact and
        immediate: the cap is enforced from it, not from the summaries still in flight)."""
        if self.reason is not None:
            return True
        p = self.plan
        if p.max_duration_s and time.perf_counter_ns() - self.started_ns >= p.max_duration_s * 1e9:
            self.reason = "duration"
            return True
        n = self.counted
        cap = bool(p.max_requests) and done - p.concurrency >= p.max_requests
        due = (
            look_counts(p.max_requests, p.looks)
            if p.baseline is not None
            else check_schedule(p.min_requests, p.max_requests)
        )
        if not cap and (self._next >= len(due) or n < due[self._next]):
            return False
        window = _window(self.records, self.inflight, p.concurrency)
        if window is not None:
            self._next += 1
            self.checks.append(n)
            last = cap or self._next >= len(due)
            prec = _precision(self.records, window, p.concurrency, p.seed)
            if p.baseline is not None:
                self.look = self._next if not cap else len(due)
                self._sequential(prec, n, last)
            else:
                reached = prec.reached(p.precision)
                if reached and self._reached and p.stop_on_precision:
                    self.reason = "precision"  # two checks in a row: not one lucky window
                self._reached = reached
        if self.reason is None and cap:
            self.reason = "cap"
        return self.reason is not None

    def _sequential(self, prec: Precision, n: int, last: bool) -> None:
        p, base = self.plan, self.plan.baseline
        assert base is not None
        # one estimator per primary metric of METRICS (tests/unit/stats/test_metric_table.py)
        estimates = {"tpot_ms": prec.tpot, "output_tok_s": prec.throughput}
        refs = {"tpot_ms": (base.tpot.median, base.tpot.se_log)}
        refs["output_tok_s"] = (base.throughput.mean, base.throughput.se_rel)
        out: dict[str, Any] = {"baseline": base.config, "looks": p.looks, "metrics": {}}
        for m, est in estimates.items():
            value = None if est is None else (est.median if isinstance(est, MedianCI) else est.mean)
            se_c = (
                None if est is None else (est.se_log if isinstance(est, MedianCI) else est.se_rel)
            )
            ref, se_b = refs[m]
            if value is None or se_c is None or value <= 0 or ref <= 0:
                out["metrics"][m] = {"status": "open", "why": "no estimate yet"}
                continue
            se = math.sqrt(se_c**2 + se_b**2)
            info = self._info.setdefault(m, [])
            i_max = 1.0 / (se_c**2 * n / max(p.max_requests, n) + se_b**2)
            t = 1.0 if last else min(1.0 - 1e-6, (1.0 / se**2) / i_max if se > 0 else 1.0)
            t = max(t, info[-1] + 1e-3) if info else t
            info.append(min(t, 1.0))
            bound = spending_boundaries(info, ld_obrien_fleming(p.alpha))[-1]
            d = decide_look(
                math.log(value / ref),
                se,
                bound,
                higher_is_better=METRICS[m].higher_is_better,
                min_effect=p.min_effect,
            )
            out["metrics"][m] = {
                "status": d.status,
                "ratio": d.ratio,
                "low": d.low,
                "high": d.high,
                "z": d.z,
                "boundary": d.boundary,
                "info": info[-1],
            }
        self.sequential = out
        statuses = [v["status"] for v in out["metrics"].values()]
        if "open" not in statuses:
            wins = {s for s in statuses if s != "equivalent"}
            verdict = "equivalent" if not wins else wins.pop() if len(wins) == 1 else "mixed"
            self.reason = f"sequential-{verdict}"


def baseline_ref(
    config: str, records: Sequence[RequestRecord], window_ns: Sequence[int] | None, concurrency: int
) -> BaselineRef | None:
    """The reference a candidate is tested against, from a stored baseline point's counted
    requests (``window_ns``: its steady window; default first send → last end)."""
    good = [r for r in records if r.counted and r.ok and r.event_ns]
    good.sort(key=lambda r: r.send_ns)
    tpots = [t for t in (tpot_ms(r) for r in good) if t is not None]
    if len(tpots) < 10:
        return None
    w0, w1 = (
        (int(window_ns[0]), int(window_ns[1]))
        if window_ns
        else (min(r.send_ns for r in good), max(r.end_ns for r in good))
    )
    rates = request_span_rates(records, w0, w1)
    if len(rates) < 2:
        return None
    med = block_bootstrap_median(tpots, block_length(len(tpots), concurrency))
    return BaselineRef(config, med, batch_means(rates))
