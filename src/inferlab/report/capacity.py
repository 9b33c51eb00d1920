"""Capacity at SLO per config as a compared metric: the stored ``capacity`` analyses
(``campaign.parts.capacity``) read back and each config's set against the baseline's
(``stats.capacity.compare_capacity``): ×ratio of the isotonic estimates, a verdict only when
the capacity intervals separate, refused under different SLOs or workloads."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inferlab.stats.capacity import CapacityRatio, CapacityValue, compare_capacity
from inferlab.store.capacity import stored_capacities

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["CapacityRow", "capacity_rows", "stored_capacities"]


@dataclass(frozen=True)
class CapacityRow:
    """One config's capacity and, off the baseline, its ratio to the baseline's."""

    config: str
    value: CapacityValue
    simulated: bool
    vs_baseline: CapacityRatio | None  # None: the baseline itself, or it has none

    def to_json(self) -> dict[str, JsonValue]:
        v, r = self.value, self.vs_baseline
        return {
            "config": self.config,
            "slo": v.slo,
            "unit": v.unit,
            "low": v.low,
            "high": v.high,
            "estimate": v.estimate.to_json() if v.estimate is not None else None,
            "simulated": self.simulated,
            "launches": v.launches,
            "ratio": r.ratio.to_json() if r is not None and r.ratio is not None else None,
            "verdict": r.verdict if r is not None else None,
            "reason": r.reason if r is not None else None,
        }

    @property
    def capacity_text(self) -> str:
        """``C 4–5 (isotonic 4.3 [4.1–4.6])``, or over rate ``2.5–2.75 req/s (isotonic …)``."""
        v = self.value
        head, tail = ("C ", "") if v.unit == "concurrency" else ("", " req/s")
        text = f"{v.low:g}" if v.high == v.low else f"{v.low:g}–{v.high:g}"
        if v.high is None:
            text = f"≥ {v.low:g}"
        text = head + text + tail
        e = v.estimate
        if e is not None and not math.isnan(e.low):
            f = ".1f" if v.unit == "concurrency" else ".3g"
            text += f" (isotonic {e.estimate:{f}} [{e.low:{f}}–{e.high:{f}}])"
        return text + (f"; {v.launches}" if v.launches else "")

    @property
    def ratio_text(self) -> str:
        r = self.vs_baseline
        if r is None:
            return "baseline"
        if r.ratio is None:
            return r.reason if r.verdict == "not comparable" else r.verdict
        x = r.ratio
        return f"×{x.estimate:.2f} [{x.low:.2f}–{x.high:.2f}] {r.verdict}"


def capacity_rows(
    caps: dict[str, tuple[CapacityValue, bool]], configs: Sequence[str], baseline: str | None
) -> list[CapacityRow]:
    """One row per config of ``configs`` with a stored capacity, the baseline's first."""
    order = [c for c in configs if c in caps] + [c for c in caps if c not in configs]
    base = baseline if baseline in caps else (order[0] if order else None)
    if base is not None:
        order = [base] + [c for c in order if c != base]
    rows = []
    for cfg in order:
        v, sim = caps[cfg]
        r = None if cfg == base or base is None else compare_capacity(caps[base][0], v)
        rows.append(CapacityRow(cfg, v, sim, r))
    return rows
