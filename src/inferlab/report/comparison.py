"""The comparison model of ``inferlab compare``: a ``Cell`` per config and load point.
The ``Comparison`` holds them. Built by ``report.compare``, adjusted by the baseline recheck
(``report.recheck``), rendered by ``report.compare_export`` and the report pages."""

from __future__ import annotations

from dataclasses import dataclass, field

from inferlab.report.capacity import CapacityRow
from inferlab.stats.compare import Difference
from inferlab.stats.metrics import METRICS
from inferlab.stats.quality import QualityWarning
from inferlab.stats.recheck import RecheckPoint
from inferlab.stats.saturation import Saturation
from inferlab.stats.spread import LaunchSpread
from inferlab.stats.verdict import Verdict

__all__ = ["Cell", "Comparison"]


@dataclass
class Cell:
    """One config at one load point: its value per metric and, off the baseline, verdicts."""

    config: str
    label: str
    trials: int
    values: dict[str, float]
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    warnings: list[QualityWarning] = field(default_factory=list)
    forced: list[Difference] = field(default_factory=list)
    levers: list[str] = field(default_factory=list)  # diff items not applied (report.applied)
    untrusted: str | None = None  # "untrusted: client lag" when any of its runs is
    untrusted_reasons: list[dict[str, str]] = field(default_factory=list)
    blocked: str | None = None  # why no claim at all (its or the baseline's trust)
    looks: dict[str, str] = field(default_factory=dict)  # metric → "look 2/4" (sequential)
    drift: str | None = None  # why refused: the baseline moved at this point (its recheck)
    drift_refused: list[str] = field(default_factory=list)  # the metrics refused for it
    #: with ``[load] interleave``: the baseline measurement its verdicts were taken against
    #: (its nearest pass, ``store.interleave``), and whether that is an interleaved pass
    against: str | None = None
    interleaved: bool = False

    def no_claim(self, metric: str) -> str | None:
        """Why the cell makes no claim on ``metric`` ("untrusted: client lag", "not
        comparable: baseline drift"); None when its verdict (if any) stands."""
        if self.blocked:
            return self.blocked
        if metric in self.drift_refused:
            return "not comparable: baseline drift"
        if metric not in self.verdicts and self.untrusted:
            return self.untrusted
        return None


@dataclass
class Comparison:
    """Configs × load points against ``baseline``: the cells, each config's saturation and its
    differences from the baseline, the thresholds (``alpha``; ``min_effect`` a fraction)."""

    baseline: str
    configs: list[str]
    labels: list[str]
    metrics: list[str]
    cells: dict[tuple[str, str], Cell]
    saturation: dict[str, Saturation]
    differences: dict[str, list[Difference]]
    min_effect: float
    alpha: float
    forced: bool
    #: the baseline's recheck per load point (``stats.recheck``); empty when not rechecked
    rechecks: list[RecheckPoint] = field(default_factory=list)
    #: ``[load] interleave``: the baseline's passes (``report.interleave.pass_rows``), and
    #: whether they are the reference engine's (SIMULATED)
    passes: list[tuple[str, ...]] = field(default_factory=list)
    passes_simulated: bool = False
    #: capacity at SLO per config, the baseline's first (``report.capacity``); empty: none
    capacity: list[CapacityRow] = field(default_factory=list)
    #: (label, metric) → the launch-to-launch spread there (``stats.spread``), counted in
    #: every one-launch-per-side verdict; empty when no config was launched twice
    launch: dict[tuple[str, str], LaunchSpread] = field(default_factory=dict)

    @property
    def launch_simulated(self) -> bool:
        """Whether the launches the spread came from are the reference engine's (the
        baseline's passes or its recheck)."""
        return self.passes_simulated or any(p.simulated for p in self.rechecks)

    def launch_lines(self) -> list[str]:
        """One sentence per load point and compared metric with a spread."""
        return [
            f"{lb} {METRICS[m].title}: {x.describe()}"
            for (lb, m), x in self.launch.items()
            if m in self.metrics
        ]
