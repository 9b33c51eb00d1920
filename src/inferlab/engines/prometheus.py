"""A small, pure parser of the Prometheus text exposition format (0.0.4, and OpenMetrics' subset
that engines emit), plus metric-name definitions as data.

``parse_prometheus`` reads ``/metrics`` text into ``Sample(name, labels, value, timestamp_ms)``:
comments and ``# HELP``/``# TYPE`` lines are skipped, label values may contain escaped quotes,
backslashes and newlines, values may be ``+Inf``/``-Inf``/``NaN``, and an optional integer
timestamp (milliseconds) may follow. Histograms arrive as their ``_bucket``/``_sum``/``_count``
samples; ``histogram_buckets`` folds the buckets back into cumulative (upper bound, count) pairs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MetricDef",
    "PrometheusParseError",
    "Sample",
    "histogram_buckets",
    "parse_prometheus",
    "select",
]

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LINE_RE = re.compile(rf"^({_NAME})\s*(\{{.*\}})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_UNESCAPE = {"\\": "\\", '"': '"', "n": "\n"}


class PrometheusParseError(ValueError):
    """A line of exposition text that is not a sample (only raised with ``strict=True``)."""


@dataclass(frozen=True)
class Sample:
    """One exposition sample; ``value`` is a float (counters too), ``timestamp_ms`` optional."""

    name: str
    labels: Mapping[str, str]
    value: float
    timestamp_ms: int | None = None


def _labels(body: str) -> dict[str, str] | None:
    inner = body[1:-1].strip()
    out: dict[str, str] = {}
    pos = 0
    while pos < len(inner):
        m = _LABEL_RE.match(inner, pos)
        if m is None:
            return None
        out[m.group(1)] = re.sub(r"\\(.)", lambda e: _UNESCAPE.get(e.group(1), e.group(0)), m[2])
        pos = m.end()
    return out


def _value(text: str) -> float | None:
    try:
        return float(text)  # accepts +Inf, -Inf, Inf, NaN and exponents
    except ValueError:
        return None


def parse_prometheus(text: str, *, strict: bool = False) -> list[Sample]:
    """Samples of exposition ``text``, in order. The text is parsed with ``prometheus_client``'s
    parser; when that refuses it (a dump with a damaged line), line by line, where unparseable
    lines are skipped (or raise with ``strict``)."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:  # pragma: no cover - a dependency
        return _parse_lines(text, strict=strict)
    try:
        return [
            Sample(
                s.name,
                dict(s.labels),
                float(s.value),
                int(float(s.timestamp) * 1000) if s.timestamp is not None else None,
            )
            for fam in text_string_to_metric_families(text)
            for s in fam.samples
        ]
    except (ValueError, TypeError, IndexError):
        return _parse_lines(text, strict=strict)


def _parse_lines(text: str, *, strict: bool = False) -> list[Sample]:
    """The lenient line parser (also used when ``prometheus_client`` rejects the text)."""
    out: list[Sample] = []
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE_RE.match(line)
        labels = _labels(m.group(2)) if m and m.group(2) else {}
        value = _value(m.group(3)) if m else None
        if m is None or labels is None or value is None:
            if strict:
                raise PrometheusParseError(f"line {line_no}: not a Prometheus sample: {raw!r}")
            continue
        ts = int(m.group(4)) if m.group(4) else None
        out.append(Sample(m.group(1), labels, value, ts))
    return out


def _matches(sample: Sample, match: Mapping[str, str] | None) -> bool:
    return not match or all(sample.labels.get(k) == v for k, v in match.items())


def histogram_buckets(
    samples: Iterable[Sample], family: str, match: Mapping[str, str] | None = None
) -> list[tuple[float, float]]:
    """Cumulative ``(upper bound, count)`` of histogram ``family``, summed over its series
    (e.g. over data-parallel ranks) whose labels include ``match``; sorted, ``+Inf`` last."""
    totals: dict[float, float] = {}
    for s in samples:
        if s.name != family + "_bucket" or "le" not in s.labels or not _matches(s, match):
            continue
        le = _value(s.labels["le"])
        if le is None or math.isnan(le):
            continue
        totals[le] = totals.get(le, 0.0) + s.value
    return sorted(totals.items())


MetricType = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True)
class MetricDef:
    """A quantity inferlab reads from an engine's ``/metrics``, under every name it has had.

    ``names`` are the names as the engine's source declares them (newest first); the
    exposition adds ``_total`` to counters and ``_bucket``/``_sum``/``_count`` to histograms.
    ``unit`` states what the value measures; ``source`` says where each name was checked.
    """

    key: str
    type: MetricType
    names: tuple[str, ...]
    unit: str
    description: str
    source: str = ""

    def sample_names(self, name: str | None = None) -> tuple[str, ...]:
        """Exposition sample names of ``name`` (default: the newest)."""
        base = name or self.names[0]
        if self.type == "counter":
            return (base if base.endswith("_total") else base + "_total",)
        if self.type == "histogram":
            return (base + "_bucket", base + "_sum", base + "_count")
        return (base,)

    def all_sample_names(self) -> tuple[str, ...]:
        """Exposition sample names of every variant."""
        return tuple(s for n in self.names for s in self.sample_names(n))


def select(samples: Iterable[Sample], metric: MetricDef) -> list[Sample]:
    """Samples of the first variant of ``metric`` present (newest name first); [] if none.

    For a histogram, only the ``_sum`` and ``_count`` series are returned (buckets: use
    ``histogram_buckets``); for a counter, its ``_total`` series.
    """
    pool = list(samples)
    for name in metric.names:
        wanted = metric.sample_names(name)
        if metric.type == "histogram":
            wanted = wanted[1:]
        found = [s for s in pool if s.name in wanted]
        if found:
            return found
    return []
