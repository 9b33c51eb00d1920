"""Capacity at SLO read back from the store: the latest ``capacity`` analysis of each config
(written by ``campaign.capacity``) as a ``stats.capacity.CapacityValue``."""

from __future__ import annotations

import math

from inferlab.stats.capacity import CapacityValue
from inferlab.stats.summary import Interval
from inferlab.store.db import Store
from inferlab.store.outcomes import CapacityBody

__all__ = ["KIND", "stored_capacities"]

#: the analyses' kind (``campaign.capacity.CAPACITY_KIND``)
KIND = "capacity"


def _value(data: CapacityBody) -> CapacityValue:
    e, nan = data.estimate, math.nan
    est = None
    if e is not None and e.estimate is not None:
        low, high = (nan if x is None else x for x in (e.low, e.high))
        est = Interval(e.estimate, low, high, e.level or 0.95)
    return CapacityValue(
        data.slo, data.low or 0.0, data.high, est, data.workload, data.unit, _launches(data)
    )


def _launches(data: CapacityBody) -> str:
    """``one launch`` / ``across launches ±6.0%``; empty for an analysis stored without
    (per-probe verdicts at 95% each, one launch)."""
    if data.definition is None:
        return ""
    return f"across launches ±{data.launch.tau:.1%}" if data.launch else "one launch"


def stored_capacities(store: Store, campaign: str | None) -> dict[str, tuple[CapacityValue, bool]]:
    """The latest stored capacity of each config of ``campaign`` (config → value, simulated)."""
    out: dict[str, tuple[CapacityValue, bool]] = {}
    for a in store.analyses.of(CapacityBody, KIND, campaign):
        if a.config is not None:
            out[a.config] = (_value(a.data), a.data.simulated)
    return out
