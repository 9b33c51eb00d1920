"""Scrape a server's Prometheus ``/metrics`` around and during a load point, and derive the
numbers a campaign needs (speculative accept length, acceptance rate, the prefix-cache hit
rate, peak and mean KV-cache usage, peak running / waiting requests)."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inferlab.engines import EngineSpec
from inferlab.engines.prometheus import PrometheusParseError, Sample, parse_prometheus, select

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["Scrape", "Scraper", "derive", "scrape_once"]


@dataclass
class Scrape:
    """One scrape: when (perf_counter_ns) and every sample it returned."""

    t_ns: int
    samples: list[Sample]
    error: str | None = None


def scrape_once(url: str, timeout_s: float = 5.0) -> Scrape:
    """GET ``url`` (a full /metrics URL) and parse it; a failure is recorded, never raised."""
    t = time.perf_counter_ns()
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            text = r.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return Scrape(t, [], f"{type(exc).__name__}: {exc}")
    try:
        return Scrape(t, parse_prometheus(text))
    except PrometheusParseError as exc:
        return Scrape(t, [], f"unparsable /metrics: {exc}")


@dataclass
class Scraper:
    """Scrapes every ``interval_s`` in a background thread between ``start`` and ``stop``
    (and once at each end), so a load point has before / during / after samples."""

    url: str
    interval_s: float = 2.0
    scrapes: list[Scrape] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Scraper:
        self.scrapes.append(scrape_once(self.url))
        self._thread = threading.Thread(target=self._run, daemon=True, name="inferlab-scrape")
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.scrapes.append(scrape_once(self.url))

    def stop(self) -> list[Scrape]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.interval_s + 6)
        self.scrapes.append(scrape_once(self.url))
        return self.scrapes


#: busy scrapes a point's mean queue is taken over (fewer: no mean)
MEAN_SCRAPES = 3


def _total(spec: EngineSpec, key: str, samples: list[Sample]) -> float | None:
    m = spec.metric(key)
    if m is None:
        return None
    found = select(samples, m)
    vals = [s.value for s in found if not s.name.endswith("_count")]
    return sum(vals) if vals else None


def derive(spec: EngineSpec, scrapes: list[Scrape]) -> dict[str, JsonValue]:
    """Values per load point from the first and last good scrape (counter deltas) and the
    maxima over all scrapes (gauges). Keys are absent when the engine does not expose them."""
    good = [s for s in scrapes if s.error is None and s.samples]
    out: dict[str, JsonValue] = {
        "scrapes": len(scrapes),
        "failed_scrapes": len(scrapes) - len(good),
    }
    if not good:
        return out
    first, last = good[0].samples, good[-1].samples

    def delta(key: str) -> float | None:
        a, b = _total(spec, key, first), _total(spec, key, last)
        return None if a is None or b is None else b - a

    drafts, draft_tokens, accepted = (
        delta("spec_drafts"),
        delta("spec_draft_tokens"),
        delta("spec_accepted_tokens"),
    )
    if drafts and accepted is not None:
        out["spec_accept_length"] = 1.0 + accepted / drafts  # tokens per verifier step
    if draft_tokens and accepted is not None:
        out["spec_acceptance_rate"] = accepted / draft_tokens
    gen = delta("generation_tokens")
    if gen is not None:
        out["generation_tokens"] = gen
    out.update(_prefix_cache(spec, good, delta))
    for key, name in (
        ("kv_cache_usage", "max_kv_cache_usage"),
        ("running", "max_running"),
        ("waiting", "max_waiting"),
        ("spec_accept_length", "max_spec_accept_length"),
    ):
        vals = [v for s in good if (v := _total(spec, key, s.samples)) is not None]
        if vals:
            out[name] = max(vals)
            if key == "kv_cache_usage":
                out["mean_kv_cache_usage"] = sum(vals) / len(vals)
    out.update(_queue(spec, good))
    return out


def _queue(spec: EngineSpec, good: list[Scrape]) -> dict[str, JsonValue]:
    """How long requests queued: ``busy_scrapes`` (scrapes with a request running or waiting)
    and, from ``MEAN_SCRAPES`` of them on, ``mean_waiting`` over them. A cap keeps requests
    waiting the whole point; one scrape that lands while a step admits its batch does not (the
    maxima alone cannot tell). The mean is absent, not low, below that count: the lever rules
    take each key's maximum over trials, which must not pair one trial's count with
    another's mean."""
    busy = []
    for s in good:
        run, wait = _total(spec, "running", s.samples), _total(spec, "waiting", s.samples)
        if run is not None and wait is not None and run + wait > 0:
            busy.append(wait)
    if not busy:
        return {}
    out: dict[str, JsonValue] = {"busy_scrapes": len(busy)}
    if len(busy) >= MEAN_SCRAPES:
        out["mean_waiting"] = sum(busy) / len(busy)
    return out


def _prefix_cache(
    spec: EngineSpec, good: list[Scrape], delta: Callable[[str], float | None]
) -> dict[str, JsonValue]:
    """The point's prefix-cache hit rate: hit tokens over looked-up prompt tokens, from counter
    deltas (vLLM's ``prefix_cache_hits`` / ``prefix_cache_queries``; SGLang's
    ``cached_tokens`` / ``prompt_tokens``); else the mean of SGLang's per-batch gauge
    over the scrapes, kept apart as ``prefix_cache_hit_rate_gauge`` (a mean of last-batch
    rates, not weighted by tokens). vLLM with prefix caching off looks nothing up: its flat
    counters give ``prefix_cache_queries`` 0 and no rate (0 hits of 0 lookups)."""
    hits, queries = delta("prefix_cache_hits"), delta("prefix_cache_queries")
    if hits is not None and queries:
        return {"prefix_cache_hit_rate": hits / queries, "prefix_cache_queries": queries}
    if hits == 0 and queries == 0:
        return {"prefix_cache_queries": 0.0}
    cached, prompt = delta("cached_tokens"), delta("prompt_tokens")
    if cached is not None and prompt:
        return {"prefix_cache_hit_rate": cached / prompt, "prefix_cache_queries": prompt}
    vals = [v for s in good if (v := _total(spec, "cache_hit_rate", s.samples)) is not None]
    return {"prefix_cache_hit_rate_gauge": sum(vals) / len(vals)} if vals else {}
