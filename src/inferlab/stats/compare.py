"""Statistics behind ``inferlab compare``: ratios with intervals, tests, verdicts, saturation.

Pure functions, no I/O. Every ratio is candidate / baseline of the same metric at the same load
point. A change is claimed only when a test on raw samples is significant *and* the ratio clears
a minimum effect *and* its interval excludes 1; anything that goes wrong inside the statistics
yields ``"~"`` with the reason, never a claim. Methods and their justification: docs/compare.md.

The modules behind it, each importable on its own: ``stats.intervals`` (bootstrap and
batch-means intervals of a ratio), ``stats.difference`` (tests of difference),
``stats.verdict`` (the decision rule and the per-metric verdicts), ``stats.quality``
(measurement-quality warnings) and ``stats.saturation``. This module holds the comparability
check and re-exports the public names of the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.stats.difference import (
    MannWhitney,
    mann_whitney_u,
    min_attainable_p,
    permutation_test,
    welch_t_test,
)
from inferlab.stats.dist import t_quantile
from inferlab.stats.intervals import (
    Statistic,
    sample_ratio,
    throughput_ratio_batches,
    throughput_ratio_trials,
)
from inferlab.stats.metrics import batch_rates
from inferlab.stats.quality import QualityWarning, min_samples, quality_warnings
from inferlab.stats.saturation import Saturation, find_saturation
from inferlab.stats.verdict import (
    HIGHER_IS_BETTER,
    Claim,
    ThroughputSample,
    Verdict,
    compare_samples,
    compare_throughput,
    decide,
)

__all__ = [
    "COMPARABLE_FIELDS",
    "HIGHER_IS_BETTER",
    "Claim",
    "Difference",
    "MannWhitney",
    "QualityWarning",
    "Saturation",
    "Statistic",
    "ThroughputSample",
    "Verdict",
    "batch_rates",
    "check_comparable",
    "compare_samples",
    "compare_throughput",
    "decide",
    "find_saturation",
    "mann_whitney_u",
    "min_attainable_p",
    "min_samples",
    "permutation_test",
    "quality_warnings",
    "sample_ratio",
    "t_quantile",
    "throughput_ratio_batches",
    "throughput_ratio_trials",
    "welch_t_test",
]

#: fields that must match (or be missing on both sides) for a delta to mean anything
COMPARABLE_FIELDS = (
    "model",
    "gpu_name",
    "gpu_count",
    "engine_version",
    "workload_hash",
    "metrics_version",
)


@dataclass(frozen=True, slots=True)
class Difference:
    """A field that differs between two runs (``None``: missing on that side)."""

    field: str
    a: Any
    b: Any

    def __str__(self) -> str:
        return f"{self.field}: {self.a!r} vs {self.b!r}"


def check_comparable(
    a: Mapping[str, Any], b: Mapping[str, Any], fields: Sequence[str] = COMPARABLE_FIELDS
) -> list[Difference]:
    """The fields whose values differ; empty means comparable. A field missing (absent or
    None) on both sides is not a difference; missing on one side is."""
    out: list[Difference] = []
    for f in fields:
        va, vb = a.get(f), b.get(f)
        if va is None and vb is None:
            continue
        if va is None or vb is None or va != vb:
            out.append(Difference(f, va, vb))
    return out
