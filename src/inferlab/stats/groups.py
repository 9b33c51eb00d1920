"""A group of trials' samples, value and verdict on each metric of ``METRICS``.
A group is one config at one load point: per-request samples come from its measured requests;
a per-trial metric has one value per trial (output throughput with batch rates for a single
trial); its verdict is against another group. Read by ``compare`` and the baseline recheck
(``stats.recheck``); the groups themselves are ``store.groups.RunGroup``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from inferlab.errors import ConfigError
from inferlab.records import RequestRecord
from inferlab.stats.metrics import (
    METRICS,
    PerRequest,
    PerTrial,
    batch_rates,
    listed,
    statistic_of,
)
from inferlab.stats.metrics import metric as metric_row
from inferlab.stats.spread import LaunchSpread
from inferlab.stats.stopping import request_span_rates
from inferlab.stats.verdict import (
    Rule,
    ThroughputSample,
    Verdict,
    compare_samples,
    compare_throughput,
)

__all__ = [
    "Trial",
    "TrialGroup",
    "batch_rates_of",
    "group_value",
    "group_verdict",
    "measured",
    "per_request",
    "throughput_sample",
    "trial_values",
]


class Trial(Protocol):
    """One measured trial as the statistics read it (``store.RunRow`` is one)."""

    @property
    def id(self) -> int:
        """Its run id."""
        ...

    @property
    def summary(self) -> Mapping[str, Any]:
        """Its stored summary: each metric's value, ``duration_s``."""
        ...

    @property
    def stop(self) -> Mapping[str, Any] | None:
        """Why it stopped; ``window_ns`` [start, end] when adaptive."""
        ...

    @property
    def environment(self) -> Mapping[str, Any]:
        """Its host and engine (``engine_name``)."""
        ...

    @property
    def trust(self) -> str:
        """'trusted' or 'untrusted'."""
        ...


class TrialGroup(Protocol):
    """The trials of one config at one load point, with each trial's raw request records."""

    @property
    def runs(self) -> Sequence[Trial]: ...

    @property
    def records(self) -> Sequence[Sequence[RequestRecord]]: ...


def measured(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """The counted, successful requests with their token events."""
    return [r for r in records if r.counted and r.ok and r.event_ns]


def per_request(metric: str, records: Sequence[RequestRecord]) -> list[float]:
    """Per-request samples of ``metric`` (its sampler in ``METRICS``) from the measured
    requests."""
    m = METRICS.get(metric)
    if m is None or not isinstance(m.sampler, PerRequest):
        known = ", ".join(x.name for x in listed(lambda x: isinstance(x.sampler, PerRequest)))
        raise ConfigError(f"--metric: unknown per-request metric {metric!r}; expected {known}")
    return [x for r in measured(records) for x in m.sampler.of(r)]


def trial_values(metric: str, g: TrialGroup) -> tuple[float, ...]:
    """``metric``'s value in each trial's stored summary (a missing one counts 0)."""
    return tuple(float(r.summary.get(metric) or 0.0) for r in g.runs)


def throughput_sample(g: TrialGroup, metric: str = "output_tok_s") -> ThroughputSample:
    """``metric`` per trial; with one trial, its batch rates too when the metric has them."""
    rates: tuple[float, ...] = ()
    s = metric_row(metric).sampler
    if len(g.runs) == 1 and isinstance(s, PerTrial) and s.batch_rates:
        rates = batch_rates_of(g.runs[0], g.records[0])
    return ThroughputSample(trials=trial_values(metric, g), batch_rates=rates)


def group_value(metric: str, g: TrialGroup) -> float:
    """The group's value of ``metric``: the mean over trials of a per-trial metric, else the
    metric's statistic of the requests pooled over trials."""
    s = metric_row(metric).sampler
    if isinstance(s, PerTrial):
        vals = trial_values(metric, g)
        return sum(vals) / len(vals)
    return statistic_of([x for recs in g.records for x in per_request(metric, recs)], s.statistic)


def group_verdict(
    metric: str,
    a: TrialGroup,
    b: TrialGroup,
    *,
    alpha: float = 0.05,
    min_effect: float = 0.02,
    launch: LaunchSpread | None = None,
) -> Verdict:
    """``b`` against ``a`` on ``metric`` from the raw samples: a per-trial metric (output
    throughput) by ``compare_throughput``, a per-request metric by ``compare_samples`` on its
    statistic; ``launch``: each side is one launch, and this is the launch-to-launch spread of
    ``metric`` there (``stats.launches``)."""
    s, rule = metric_row(metric).sampler, Rule(alpha=alpha, min_effect=min_effect)
    if isinstance(s, PerTrial):
        return compare_throughput(
            throughput_sample(a, metric),
            throughput_sample(b, metric),
            metric=metric,
            rule=rule,
            launch=launch,
        )
    return compare_samples(
        metric,
        [per_request(metric, recs) for recs in a.records],
        [per_request(metric, recs) for recs in b.records],
        statistic=s.statistic,
        rule=rule,
        launch=launch,
    )


def batch_rates_of(run: Trial, records: Sequence[RequestRecord]) -> tuple[float, ...]:
    """One trial's batch rates (tok/s): over its steady window when adaptive (20 slices, as
    its stopping rule measured them), else 10 slices of first send → last end."""
    window = (run.stop or {}).get("window_ns")
    if window:
        return tuple(request_span_rates(records, int(window[0]), int(window[1])))
    recs = [r for r in records if r.counted]
    good = measured(recs)
    sends = [r.send_ns for r in recs if r.send_ns]
    span = float(run.summary.get("duration_s") or 0.0)
    if good and sends and span > 0:
        return tuple(batch_rates(good, min(sends), span))
    return ()
