"""Definitions the report quotes next to its numbers (docs/metrics.md, version 1): each
metric's own (``METRICS``), then the report's terms."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from inferlab.stats.metrics import METRICS, listed

__all__ = ["DEFINITIONS"]

#: term → its definition, as the report prints it (after the metrics' definitions)
_TERMS: dict[str, str] = {
    "ratio": "×ratio = candidate / baseline at the same load point, with its 95% interval "
    "(bootstrap; batch means for one-trial throughput); a change is claimed only when "
    "p < α, the interval excludes 1 and |change| ≥ the minimum effect, else “~ within noise” "
    "(docs/compare.md); a point measured with a starved client (loop-lag p99 over its limit), "
    "a TPOT median of 0 or cut short is untrusted and never claimed from; a sequential A/B "
    "names the look that settled it",
    "saturation": "saturated by C: no higher concurrency gains ≥ 5% output throughput while "
    "TPOT grows (docs/compare.md)",
    "server": "scraped from the server's /metrics around each load point: accept length = "
    "1 + accepted / drafts (tokens per verifier step); maxima over scrapes for gauges",
}


class _Definitions(Mapping[str, str]):
    """A live view: each metric with a definition (``listed`` order), then ``_TERMS``."""

    def __getitem__(self, key: str) -> str:
        m = METRICS.get(key)
        if m is not None and m.definition is not None:
            return m.definition
        return _TERMS[key]

    def __iter__(self) -> Iterator[str]:
        yield from (m.name for m in listed(lambda m: m.definition is not None))
        yield from _TERMS

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: metric name or term → its definition, as the report prints it
DEFINITIONS: Mapping[str, str] = _Definitions()
