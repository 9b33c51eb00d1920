"""Pure statistics: per-request metrics, summaries and intervals, stopping rules, trust,
saturation and noise-aware verdicts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.stats.compare import Difference
    from inferlab.stats.metrics import PointSummary, itl_ms, summarize, tpot_ms
    from inferlab.stats.saturation import Saturation, find_saturation
    from inferlab.stats.stopping import Precision, StopRecord
    from inferlab.stats.summary import Distribution, Interval, describe, percentile
    from inferlab.stats.trust import Trust, assess
    from inferlab.stats.verdict import Verdict, compare_samples, compare_throughput

__all__ = [
    "Difference",
    "Distribution",
    "Interval",
    "PointSummary",
    "Precision",
    "Saturation",
    "StopRecord",
    "Trust",
    "Verdict",
    "assess",
    "compare_samples",
    "compare_throughput",
    "describe",
    "find_saturation",
    "itl_ms",
    "percentile",
    "summarize",
    "tpot_ms",
]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.stats.compare": ("Difference",),
        "inferlab.stats.metrics": ("PointSummary", "itl_ms", "summarize", "tpot_ms"),
        "inferlab.stats.saturation": ("Saturation", "find_saturation"),
        "inferlab.stats.stopping": ("Precision", "StopRecord"),
        "inferlab.stats.summary": ("Distribution", "Interval", "describe", "percentile"),
        "inferlab.stats.trust": ("Trust", "assess"),
        "inferlab.stats.verdict": ("Verdict", "compare_samples", "compare_throughput"),
    },
)
