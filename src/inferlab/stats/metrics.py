"""Per-request metrics, per-load-point summaries and ``METRICS``, the one table of the
metrics a point reports, exactly as docs/metrics.md defines them.

Pure functions over ``RequestRecord`` lists. Times in records are ns; summaries are in ms,
tokens/s and requests/s. Warmup and failed requests never enter latency statistics.

``METRICS`` (name → ``Metric``: title, unit, digits, direction, sampler, definition, where it
is shown) is what every consumer iterates: the verdicts' directions (``stats.verdict``), the
samples a verdict reads (``stats.groups``), ``compare``'s columns, the report's tables and
definitions, the baseline recheck's metrics and ``export``'s run columns. A new compared
metric is one row (docs/design.md, "Worked example: a new metric").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from inferlab.records import RequestRecord
from inferlab.stats.intervals import QUANTILES, Statistic
from inferlab.stats.perrequest import (
    e2e_samples as _e2e_ms,
)
from inferlab.stats.perrequest import (
    icl_ms,
    itl_ms,
    tpot_ms,
)
from inferlab.stats.perrequest import (
    tpot_samples as _tpot_ms,
)
from inferlab.stats.perrequest import (
    ttft_samples as _ttft_ms,
)
from inferlab.stats.perrequest import (
    user_tok_s_samples as _user_tok_s,
)
from inferlab.stats.summary import Distribution, Interval, bootstrap_ci, describe, percentile

if TYPE_CHECKING:
    from pydantic import JsonValue

    from inferlab.stats.slo import SloPoint

__all__ = [
    "METRICS",
    "Metric",
    "PerRequest",
    "PerTrial",
    "PointSummary",
    "batch_rates",
    "icl_ms",
    "itl_ms",
    "listed",
    "meets_slo",
    "metric",
    "peak_concurrency",
    "statistic_of",
    "summarize",
    "throughput_interval",
    "tpot_ms",
]

_NS_PER_MS = 1e6


def meets_slo(
    rec: RequestRecord,
    *,
    ttft_ms: float | None = None,
    tpot_ms_max: float | None = None,
    e2e_ms: float | None = None,
) -> bool:
    """True when the request succeeded and meets every SLO given."""
    if not rec.ok or rec.ttft_ns is None or rec.e2e_ns is None:
        return False
    if ttft_ms is not None and rec.ttft_ns / _NS_PER_MS > ttft_ms:
        return False
    if tpot_ms_max is not None:
        t = tpot_ms(rec)
        if t is not None and t > tpot_ms_max:
            return False
    return not (e2e_ms is not None and rec.e2e_ns / _NS_PER_MS > e2e_ms)


def batch_rates(
    good: Sequence[RequestRecord], start_ns: int, window_s: float, batches: int = 10
) -> list[float]:
    """Output rate (tok/s) of each of ``batches`` equal slices of the window, counting each
    token where its event arrived."""
    if window_s <= 0 or batches < 1:
        return []
    width = window_s * 1e9 / batches
    counts = [0.0] * batches
    for r in good:
        for t, k in zip(r.event_ns, r.event_tokens or [1] * len(r.event_ns)):
            counts[min(batches - 1, max(0, int((t - start_ns) / width)))] += k
    return [c / (width / 1e9) for c in counts]


def throughput_interval(
    good: Sequence[RequestRecord], tput: float, start_ns: int, window_s: float, batches: int = 10
) -> Interval:
    """95% interval of output throughput by batch means: the window is cut into ``batches``
    equal slices, each slice's rate counts the tokens whose event arrived in it; the relative
    half-width t·sd/√k of those rates is applied to ``tput``. NaN bounds for tiny windows."""
    nan = float("nan")
    if window_s <= 0 or not good:
        return Interval(tput, nan, nan, 0.95)
    rates = batch_rates(good, start_ns, window_s, batches)
    mean = sum(rates) / batches
    if mean <= 0:
        return Interval(tput, nan, nan, 0.95)
    sd = (sum((x - mean) ** 2 for x in rates) / (batches - 1)) ** 0.5
    rel = _T975[batches - 1] * sd / batches**0.5 / mean
    return Interval(tput, tput * (1 - rel), tput * (1 + rel), 0.95)


#: two-sided 95% Student t quantiles by degrees of freedom (scipy.stats.t.ppf(0.975, df))
_T975 = {4: 2.776, 9: 2.262, 19: 2.093}


def peak_concurrency(records: Sequence[RequestRecord]) -> int:
    """Most requests in flight at once (send → end), over the records given."""
    edges: list[tuple[int, int]] = []
    for r in records:
        if r.send_ns and r.end_ns:
            edges.append((r.send_ns, 1))
            edges.append((r.end_ns, -1))
    edges.sort(key=lambda e: (e[0], e[1]))
    cur = best = 0
    for _, d in edges:
        cur += d
        best = max(best, cur)
    return best


@dataclass(frozen=True)
class PointSummary:
    """Everything derived from one load point's measured (non-warmup) requests."""

    requests: int  # measured requests issued
    ok: int
    errors: dict[str, int]
    duration_s: float  # measurement window: first send → last end of measured requests
    ttft_ms: Distribution
    tpot_ms: Distribution
    itl_ms: Distribution
    icl_ms: Distribution
    e2e_ms: Distribution
    queue_delay_ms: Distribution  # open loop: send − scheduled
    user_tok_s: Distribution  # per-request 1/TPOT
    output_tok_s: float
    total_tok_s: float
    request_s: float
    goodput_req_s: float | None  # None when no SLO was given
    slo_attainment: float | None
    peak_concurrency: int
    input_tokens: int
    output_tokens: int
    ttft_mean_ci: Interval
    tpot_median_ci: Interval
    output_tok_s_ci: Interval
    length_warnings: int
    warnings: list[str] = field(default_factory=list)
    #: the value of each per-request metric of ``METRICS`` with no field above (by name)
    more: dict[str, float] = field(default_factory=dict)
    #: the SLO at this point (``stats.slo``); None when none was given
    slo: SloPoint | None = None

    def to_json(self) -> dict[str, JsonValue]:
        """The fields by name, then ``more``'s metrics at the same level (``slo`` only when
        given)."""
        out: dict[str, JsonValue] = {}
        for k, v in self.__dict__.items():
            if k not in ("more", "slo"):
                out[k] = v.to_json() if hasattr(v, "to_json") else v
        slo = {"slo": self.slo.to_json()} if self.slo is not None else {}
        return {**out, **self.more, **slo}


def _per_s(count: float, window_s: float) -> float:
    """``count`` per second of ``window_s``; 0 for an empty window."""
    return count / window_s if window_s > 0 else 0.0


def _prompt_tokens(r: RequestRecord) -> int:
    """Prompt tokens as the server reported them (usage), else as the client counted them."""
    return r.usage_prompt_tokens if r.usage_prompt_tokens is not None else r.input_tokens or 0


def summarize(
    records: Sequence[RequestRecord],
    *,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
    slo_e2e_ms: float | None = None,
    seed: int = 0,
) -> PointSummary:
    """Summarize a load point. Throughput = tokens of successful measured requests / window."""
    measured = [r for r in records if not r.warmup]
    good = [r for r in measured if r.ok and r.event_ns]
    errors = Counter(r.error_kind.value for r in measured if r.error_kind is not None)
    sends = [r.send_ns for r in measured if r.send_ns]
    ends = [r.end_ns for r in measured if r.end_ns]
    window_s = (max(ends) - min(sends)) / 1e9 if sends and ends else 0.0
    ttft, e2e, tpots, itl, icl, user = (
        [x for r in good for x in of(r)]
        for of in (_ttft_ms, _e2e_ms, _tpot_ms, itl_ms, icl_ms, _user_tok_s)
    )
    queue = [d / _NS_PER_MS for d in (r.client_queue_delay_ns for r in measured) if d is not None]
    out_tokens = sum(r.output_tokens for r in good)
    in_tokens = sum(_prompt_tokens(r) for r in good)
    has_slo = any(x is not None for x in (slo_ttft_ms, slo_tpot_ms, slo_e2e_ms))
    n_good_slo = sum(
        meets_slo(r, ttft_ms=slo_ttft_ms, tpot_ms_max=slo_tpot_ms, e2e_ms=slo_e2e_ms)
        for r in measured
    )
    tput = _per_s(out_tokens, window_s)
    tput_int = throughput_interval(good, tput, min(sends) if sends else 0, window_s)
    length_warn = sum(1 for r in good if any(w.startswith("length:") for w in r.warnings))
    return PointSummary(
        requests=len(measured),
        ok=len(good),
        errors=dict(errors),
        duration_s=window_s,
        ttft_ms=describe(ttft),
        tpot_ms=describe(tpots),
        itl_ms=describe(itl),
        icl_ms=describe(icl),
        e2e_ms=describe(e2e),
        queue_delay_ms=describe(queue),
        user_tok_s=describe(user),
        output_tok_s=tput,
        total_tok_s=_per_s(out_tokens + in_tokens, window_s),
        request_s=_per_s(len(good), window_s),
        goodput_req_s=_per_s(n_good_slo, window_s) if has_slo else None,
        slo_attainment=(n_good_slo / len(measured) if measured else None) if has_slo else None,
        peak_concurrency=peak_concurrency(measured),
        input_tokens=in_tokens,
        output_tokens=out_tokens,
        ttft_mean_ci=bootstrap_ci(ttft, "mean", seed=seed),
        tpot_median_ci=bootstrap_ci(tpots, "median", seed=seed),
        output_tok_s_ci=tput_int,
        length_warnings=length_warn,
        more={
            m.name: statistic_of([x for r in good for x in m.sampler.of(r)], m.sampler.statistic)
            for m in METRICS.values()
            if isinstance(m.sampler, PerRequest) and m.name not in PointSummary.__dataclass_fields__
        },
    )


# -- the metric table --------------------------------------------------------------------------


@dataclass(frozen=True)
class PerRequest:
    """Samples of a latency-like metric: ``of(record)`` for each measured request (none, one,
    or one per token gap), pooled over a point's requests; its value is ``statistic`` of them
    and a verdict compares that statistic (``compare_samples``)."""

    of: Callable[[RequestRecord], Sequence[float]]
    statistic: Statistic = "median"


@dataclass(frozen=True)
class PerTrial:
    """One value per trial, stored in the run's summary under the metric's name; its value is
    the mean over trials and a verdict compares the trials (``compare_throughput``).
    ``batch_rates``: a single trial is compared by the output-token rates of equal slices of
    its window (``batch_rates()``); output throughput is the one rate they measure."""

    batch_rates: bool = False


@dataclass(frozen=True)
class Metric:
    """One row of ``METRICS``. ``name`` is its key in ``PointSummary``, the stored summary and
    ``compare``'s values; ``digits``: decimals shown; ``direction``: which way is better (None:
    a count or a window, never compared); ``definition``: the sentence reports print beside
    it (None: no report shows it); ``export``: its run columns in ``export`` (``value``: one
    column; ``distribution``: mean, p50 and p99 of the stored distribution); ``compared``: a
    column of ``inferlab compare``; ``primary``: also a verdict table of the campaign report
    and a metric of the baseline recheck and the sequential A/B (``load.adaptive`` estimates
    each one)."""

    name: str
    title: str
    unit: str
    digits: int
    direction: Literal["lower", "higher"] | None
    sampler: PerRequest | PerTrial
    definition: str | None = None
    export: Literal["value", "distribution"] | None = None
    compared: bool = False
    primary: bool = False

    @property
    def higher_is_better(self) -> bool:
        if self.direction is None:
            raise ValueError(f"metric {self.name!r} has no direction: it is never compared")
        return self.direction == "higher"


# left unformatted: the METRICS table, one metric a row, its columns kept aligned
# fmt: off
_ROWS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("ok", "successful requests", "requests", 0, None, PerTrial(), export="value"),
        Metric(
            "output_tok_s", "output throughput", "tok/s", 1, "higher", PerTrial(batch_rates=True),
            "output throughput = output tokens of successful measured requests / window (first "
            "send → last end; adaptive points: token events in the steady window, end of the "
            "ramp-up → stop), tok/s; mean over trials",
            export="value", compared=True, primary=True,
        ),
        Metric("request_s", "request throughput", "req/s", 2, "higher", PerTrial(), export="value"),
        Metric("duration_s", "measurement window", "s", 2, None, PerTrial(), export="value"),
        Metric("goodput_req_s", "goodput", "req/s", 2, "higher", PerTrial(), export="value"),
        Metric(
            "ttft_ms", "median TTFT", "ms", 1, "lower", PerRequest(_ttft_ms),
            "TTFT = send → first token-bearing SSE event, ms",
            export="distribution", compared=True,
        ),
        Metric(
            "tpot_ms", "median TPOT", "ms", 2, "lower", PerRequest(_tpot_ms),
            "TPOT = (E2E − TTFT) / (output tokens − 1), ms; median over requests",
            export="distribution", compared=True, primary=True,
        ),
        Metric(
            "itl_ms", "median ITL", "ms", 2, "lower", PerRequest(itl_ms),
            "ITL = gap between token-bearing events / k for an event carrying k tokens, "
            "repeated k times, ms",
            export="distribution",
        ),
        Metric(
            "e2e_ms", "median E2E latency", "ms", 1, "lower", PerRequest(_e2e_ms),
            export="distribution",
        ),
        Metric("icl_ms", "median ICL", "ms", 2, "lower", PerRequest(icl_ms)),
        Metric("user_tok_s", "median per-user speed", "tok/s", 1, "higher",
               PerRequest(_user_tok_s)),
        Metric("total_tok_s", "total throughput", "tok/s", 1, "higher", PerTrial()),
    )
}
# fmt: on

#: name → ``Metric``, in table order (the order of ``export``'s columns); read-only
METRICS = MappingProxyType(_ROWS)


def metric(name: str) -> Metric:
    """The row of ``name``; ValueError naming the known metrics."""
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None


def listed(pred: Callable[[Metric], bool] = lambda m: True) -> list[Metric]:
    """The metrics for which ``pred`` holds, in the order ``compare`` and the reports list
    them: the primary metrics first, then table order."""
    return sorted((m for m in METRICS.values() if pred(m)), key=lambda m: not m.primary)


def statistic_of(samples: Sequence[float], statistic: Statistic) -> float:
    """``statistic`` of ``samples`` (quantiles by linear interpolation); NaN when empty."""
    if statistic == "mean":
        return sum(samples) / len(samples) if samples else math.nan
    return percentile(samples, QUANTILES[statistic])
