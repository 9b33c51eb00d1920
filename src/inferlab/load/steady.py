"""The summary and stop record of an adaptive point, from its full records.

Latency statistics use the counted requests only (not warmup, ramp-up or drain). Throughput is
measured over the steady window: from the end of the ramp-up (the last of the users' first
requests) to the stop (when the workers were told to issue nothing more), counting every token
event that arrived in it, of every successful request; its 95% interval is by batch means over
20 slices of that window (``stats.stopping``). The stop record keeps why the point stopped and
the half-widths it achieved, computed here exactly (the monitor's checks used light summaries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from inferlab.load.stopping import RuleMonitor
from inferlab.records import RequestRecord
from inferlab.stats.metrics import PointSummary, summarize, tpot_ms
from inferlab.stats.stopping import (
    StopRecord,
    batch_means,
    block_length,
    precision_of,
    request_span_rates,
)
from inferlab.stats.summary import Interval

__all__ = ["final_stop", "steady_window", "summarize_steady"]


def steady_window(
    records: Sequence[RequestRecord], finish_ns: int | None
) -> tuple[int, int] | None:
    """(end of the ramp-up, stop) in perf_counter ns; None when there is no such window."""
    measured = [r for r in records if not r.warmup and r.end_ns]
    if not measured:
        return None
    ramp = [r.end_ns for r in measured if r.dropped == "ramp-up"]
    w0 = max(ramp) if ramp else min(r.send_ns for r in measured)
    w1 = finish_ns if finish_ns is not None else max(r.end_ns for r in measured)
    return (w0, w1) if w1 > w0 else None


def _events(records: Sequence[RequestRecord]) -> tuple[list[int], list[int]]:
    times: list[int] = []
    tokens: list[int] = []
    for r in records:
        if r.warmup or not r.ok or not r.event_ns:
            continue
        times.extend(r.event_ns)
        toks = r.event_tokens if len(r.event_tokens) == len(r.event_ns) else [1] * len(r.event_ns)
        tokens.extend(toks)
    return times, tokens


def summarize_steady(
    records: Sequence[RequestRecord],
    window_ns: tuple[int, int] | None,
    *,
    seed: int = 0,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
    slo_e2e_ms: float | None = None,
) -> PointSummary:
    """``summarize`` of the counted requests, with throughput over the steady window."""
    s = summarize(
        [r for r in records if r.dropped is None],
        slo_ttft_ms=slo_ttft_ms,
        slo_tpot_ms=slo_tpot_ms,
        slo_e2e_ms=slo_e2e_ms,
        seed=seed,
    )
    if window_ns is None:
        return s
    w0, w1 = window_ns
    w_s = (w1 - w0) / 1e9
    times, tokens = _events(records)
    out = sum(k for t, k in zip(times, tokens) if w0 <= t < w1)
    tput = out / w_s
    rates = request_span_rates(records, w0, w1)
    nan = float("nan")
    ci = Interval(tput, nan, nan, 0.95)
    if len(rates) >= 2 and sum(rates) > 0:
        bm = batch_means(rates)
        ci = Interval(tput, tput * bm.low / bm.mean, tput * bm.high / bm.mean, 0.95)
    good = s.goodput_req_s * s.duration_s / w_s if s.goodput_req_s is not None else None
    return replace(
        s,
        duration_s=w_s,
        output_tok_s=tput,
        total_tok_s=tput + s.input_tokens / w_s,
        request_s=s.ok / w_s,
        goodput_req_s=good,
        output_tok_s_ci=ci,
    )


def final_stop(
    records: Sequence[RequestRecord],
    monitor: RuleMonitor,
    finish_ns: int | None,
    interrupted: bool,
    concurrency: int,
) -> StopRecord:
    """Why the point stopped and the precision it reached (exact, from the full records)."""
    window = steady_window(records, finish_ns)
    counted = sorted((r for r in records if r.counted), key=lambda r: r.send_ns)
    tpots = [t for t in (tpot_ms(r) for r in counted if r.ok) if t is not None]
    rates = request_span_rates(records, *window) if window is not None else []
    prec = precision_of(tpots, rates, concurrency, seed=monitor.seed)
    reason = "interrupted" if interrupted else (monitor.reason or "cap")
    stop = StopRecord(
        reason=reason,
        requests=len(counted),
        ramp_up=sum(1 for r in records if r.dropped == "ramp-up"),
        drain=sum(1 for r in records if r.dropped == "drain"),
        precision=None,
        half_width=prec.half_widths(),
        window_ns=window,
        lag1=prec.throughput.lag1 if prec.throughput else None,
        block=block_length(len(tpots), concurrency) if tpots else None,
        checks=list(monitor.checks),
    )
    monitor.rule.fill(stop)  # its precision target, looks, the sequential test
    return stop
