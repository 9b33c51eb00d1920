"""The runs of a comparison, grouped by config and load point, and the samples each metric reads."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.errors import ConfigError
from inferlab.records import RequestRecord
from inferlab.stats.metrics import batch_rates, tpot_ms
from inferlab.stats.stopping import request_span_rates
from inferlab.stats.verdict import ThroughputSample
from inferlab.store import RunRow, Store

__all__ = [
    "METRICS",
    "RunGroup",
    "config_keys",
    "group_runs",
    "identity",
    "label_key",
    "measured",
    "per_request",
    "select_runs",
    "throughput_sample",
]


#: metric name → (title, unit, digits)
METRICS: dict[str, tuple[str, str, int]] = {
    "output_tok_s": ("output throughput", "tok/s", 1),
    "tpot_ms": ("median TPOT", "ms", 2),
    "ttft_ms": ("median TTFT", "ms", 1),
}


@dataclass
class RunGroup:
    """The trials of one config at one load point, with each trial's raw request records."""

    runs: list[RunRow]
    records: list[list[RequestRecord]]


def label_key(label: str) -> tuple[int, float, str]:
    """Sort key of a load label: C=N by N, then rate=R by R, then anything else by name."""
    m = re.match(r"C=(\d+)", label)
    if m:
        return (0, float(m.group(1)), label)
    m = re.match(r"rate=([\d.]+|inf)", label)
    if m:
        return (1, float(m.group(1)), label)
    return (2, 0.0, label)


def select_runs(store: Store, campaign: str | None, selectors: Sequence[str]) -> list[RunRow]:
    """The runs of ``campaign``, narrowed to run ids / config names; ConfigError naming an
    unknown one."""
    if campaign is None and not selectors:
        raise ConfigError("compare: give --campaign NAME or run ids / config names")
    runs = store.runs(campaign=campaign)
    if not selectors:
        return runs
    out: list[RunRow] = []
    for sel in selectors:
        if sel.isdigit():
            hit = [r for r in store.runs(run_ids=[int(sel)])]
            if not hit:
                raise ConfigError(f"compare: no run {sel} in {store.path}")
        else:
            hit = [r for r in runs if r.config == sel]
            if not hit:
                known = sorted({r.config for r in runs})
                raise ConfigError(
                    f"compare: no config {sel!r} in {store.path}"
                    + (f" (known: {', '.join(known)})" if known else "")
                )
        out.extend(r for r in hit if r not in out)
    return out


def config_keys(runs: Sequence[RunRow]) -> dict[int, str]:
    """Config name, or name@hash when a config changed (results of two hashes never mix)."""
    hashes: dict[str, set[str]] = {}
    for r in runs:
        hashes.setdefault(r.config, set()).add(r.config_hash)
    return {
        r.id: r.config if len(hashes[r.config]) == 1 else f"{r.config}@{r.config_hash[:6]}"
        for r in runs
    }


def group_runs(
    store: Store, runs: Sequence[RunRow], keys: dict[int, str]
) -> dict[tuple[str, str], RunGroup]:
    """Runs by (config key, load label), each with its request records, in run order."""
    groups: dict[tuple[str, str], RunGroup] = {}
    for r in runs:
        g = groups.setdefault((keys[r.id], r.label), RunGroup([], []))
        g.runs.append(r)
        g.records.append(store.requests(r.id))
    return groups


def identity(r: RunRow) -> dict[str, Any]:
    """The fields ``check_comparable`` compares, from one run."""
    env = r.environment
    return {
        "model": r.model,
        "gpu_name": env.get("gpu_name"),
        "gpu_count": env.get("gpu_count") or None,
        "engine_version": env.get("engine_version"),
        "workload_hash": r.workload_hash,
        "metrics_version": r.metrics_version,
    }


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
    raise ConfigError(f"--metric: unknown metric {metric!r}; expected {', '.join(METRICS)}")


def throughput_sample(g: RunGroup) -> ThroughputSample:
    """Output tok/s per trial; with one trial, its batch rates too."""
    trials = tuple(float(r.summary.get("output_tok_s") or 0.0) for r in g.runs)
    rates: tuple[float, ...] = ()
    if len(g.runs) == 1:
        rates = _batch_rates(g.runs[0], g.records[0])
    return ThroughputSample(trials=trials, batch_rates=rates)


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
