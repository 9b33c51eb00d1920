"""A campaign's launch-to-launch spreads kept for the next campaign on the same engine, model
and host (``store.spreads``): after a run, the spread of each primary and compared metric at
each load point, from the configs launched more than once there (``stats.launches``)."""

from __future__ import annotations

from inferlab.stats.launches import launches_of
from inferlab.stats.metrics import listed
from inferlab.stats.spread import launch_spread
from inferlab.store import Store
from inferlab.store.launches import MEASURED, launch_groups
from inferlab.store.spreads import save_spreads, spread_key

__all__ = ["record_spreads"]


def record_spreads(store: Store, campaign: str) -> int:
    """Store ``campaign``'s spreads (at least one df each) under the engine, model and host
    of its runs; the number stored (0 when no config was launched twice at a point)."""
    runs = store.runs(campaign=campaign, purpose=None)
    measured = [r for r in runs if r.purpose in MEASURED and not r.interrupted]
    if not measured:
        return 0
    metrics = [m.name for m in listed(lambda m: m.compared)]
    est = launches_of(launch_groups(store, runs), metrics).estimates
    spreads = {}
    for key, configs in est.items():
        s = launch_spread([[e for _, e in c] for c in configs])
        if s is not None and s.df >= 1:
            spreads[key] = s
    return save_spreads(store, campaign, spread_key(measured[0]), spreads) if spreads else 0
