"""Capacity at SLO read back from the store: the latest ``capacity`` analysis of each config
(written by ``campaign.capacity``) as a ``stats.capacity.CapacityValue``."""

from __future__ import annotations

import math
from typing import Any

from inferlab.stats.capacity import CapacityValue
from inferlab.stats.summary import Interval
from inferlab.store.db import Store

__all__ = ["KIND", "stored_capacities"]

#: the analyses' kind (``campaign.capacity.CAPACITY_KIND``)
KIND = "capacity"


def _value(data: dict[str, Any]) -> CapacityValue:
    e = data.get("estimate")
    est = None
    if e and e.get("estimate") is not None:
        nan = math.nan
        est = Interval(
            float(e["estimate"]),
            float(e["low"]) if e.get("low") is not None else nan,
            float(e["high"]) if e.get("high") is not None else nan,
            float(e.get("level") or 0.95),
        )
    high = data.get("high")
    return CapacityValue(
        str(data.get("slo")), float(data.get("low") or 0), None if high is None else float(high),
        est, str(data.get("workload") or ""), str(data.get("unit") or "concurrency"),
        _launches(data),
    )  # fmt: skip


def _launches(data: dict[str, Any]) -> str:
    """``one launch`` / ``across launches ±6.0%``; empty for an analysis stored without
    (per-probe verdicts at 95% each, one launch)."""
    if "definition" not in data:
        return ""
    launch = data.get("launch")
    return f"across launches ±{float(launch['tau']):.1%}" if launch else "one launch"


def stored_capacities(store: Store, campaign: str | None) -> dict[str, tuple[CapacityValue, bool]]:
    """The latest stored capacity of each config of ``campaign`` (config → value, simulated)."""
    out: dict[str, tuple[CapacityValue, bool]] = {}
    for a in store.analyses(KIND, campaign):
        if a["config"] is not None:
            out[str(a["config"])] = (_value(a["data"]), bool(a["data"].get("simulated")))
    return out
