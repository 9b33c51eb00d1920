"""The samples a group of stored runs carries: per-request metric samples of the measured
requests (ms) and output throughput per trial (tok/s), with batch rates for a single trial.
Shared by ``compare`` (``report``), the baseline recheck (``store.recheck``) and ``levers``."""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.errors import ConfigError
from inferlab.records import RequestRecord
from inferlab.stats.metrics import batch_rates, tpot_ms
from inferlab.stats.stopping import request_span_rates
from inferlab.stats.verdict import ThroughputSample, Verdict, compare_samples, compare_throughput
from inferlab.store.rows import RunRow

__all__ = ["RunGroup", "group_verdict", "measured", "per_request", "throughput_sample"]


@dataclass
class RunGroup:
    """The trials of one config at one load point, with each trial's raw request records."""

    runs: list[RunRow]
    records: list[list[RequestRecord]]


def measured(records: list[RequestRecord]) -> list[RequestRecord]:
    """The counted, successful requests with their token events."""
    return [r for r in records if r.counted and r.ok and r.event_ns]


def per_request(metric: str, records: list[RequestRecord]) -> list[float]:
    """Per-request samples of ``metric`` (ms) from the measured requests."""
    good = measured(records)
    if metric == "tpot_ms":
        return [t for t in (tpot_ms(r) for r in good) if t is not None]
    if metric == "ttft_ms":
        return [r.ttft_ns / 1e6 for r in good if r.ttft_ns is not None]
    raise ConfigError(f"--metric: unknown per-request metric {metric!r}; expected tpot_ms, ttft_ms")


def throughput_sample(g: RunGroup) -> ThroughputSample:
    """Output tok/s per trial; with one trial, its batch rates too."""
    trials = tuple(float(r.summary.get("output_tok_s") or 0.0) for r in g.runs)
    rates: tuple[float, ...] = ()
    if len(g.runs) == 1:
        rates = _batch_rates(g.runs[0], g.records[0])
    return ThroughputSample(trials=trials, batch_rates=rates)


def group_verdict(
    metric: str, a: RunGroup, b: RunGroup, *, alpha: float = 0.05, min_effect: float = 0.02
) -> Verdict:
    """``b`` against ``a`` on ``metric`` from the raw samples: output throughput by
    ``compare_throughput``, a per-request metric (ms) by ``compare_samples`` on its median."""
    if metric == "output_tok_s":
        return compare_throughput(
            throughput_sample(a), throughput_sample(b), alpha=alpha, min_effect=min_effect
        )
    return compare_samples(
        metric,
        [per_request(metric, recs) for recs in a.records],
        [per_request(metric, recs) for recs in b.records],
        alpha=alpha,
        min_effect=min_effect,
    )


def _batch_rates(run: RunRow, records: list[RequestRecord]) -> tuple[float, ...]:
    """One trial's batch rates: over its steady window when adaptive (20 slices, as its
    stopping rule measured them), else 10 slices of first send → last end."""
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
