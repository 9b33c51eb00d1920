"""The launch term of a capacity at SLO, from the launch-to-launch spreads stored for the
engine, model and host it is measured on (``store.spreads``, written after a campaign with
configs launched more than once: ``campaign.parts.spreads``).

A percentile limit of TTFT, TPOT, E2E or ITL takes the stored spread of that metric's
compared value (``ttft_ms``, ``tpot_ms``, ``e2e_ms``, ``itl_ms``: their medians), at any load
point: the largest τ found over the limits' metrics and the points (a launch that runs slower
moves every latency, the tail too, by about the same factor; the largest is the
conservative choice where the points disagree). None when none is stored: the capacity is
then of one launch (``stats.capacity_error.ONE_LAUNCH``)."""

from __future__ import annotations

from collections.abc import Mapping

from inferlab.stats.capacity_error import LaunchTerm
from inferlab.stats.slo import LIMITS
from inferlab.stats.spread import LaunchSpread
from inferlab.store import Store
from inferlab.store.spreads import spread_key, stored_of

__all__ = ["limit_metric", "stored_launch_term"]


def limit_metric(key: str) -> str:
    """The compared metric whose launch spread a percentile limit takes
    (``tpot_p99_ms`` → ``tpot_ms``)."""
    return key.split("_p", 1)[0] + "_ms"


def stored_launch_term(store: Store, run_id: int, limits: Mapping[str, float]) -> LaunchTerm | None:
    """The launch term of a capacity whose first probe is stored as ``run_id`` (module
    docstring); None when no spread of the limits' metrics is stored for its engine, model
    and host."""
    runs = store.runs(run_ids=[run_id], purpose=None)
    if not runs:
        return None
    key = spread_key(runs[0])
    metrics = {limit_metric(k) for k in limits if LIMITS[k].statistic is not None}
    best: tuple[LaunchSpread, str] | None = None
    for a in stored_of(store, key):
        d = a.data
        if d.metric not in metrics or d.df < 1:
            continue
        where = f"stored: campaign {a.campaign}, {a.created_at[:10]}, {d.metric} at {d.label}"
        s = LaunchSpread(d.tau, d.df, d.launches, d.within or 0.0)
        if best is None or s.tau > best[0].tau:
            best = (s, where)
    if best is None:
        return None
    return LaunchTerm(best[0], f"{best[1]} ({key.describe()}; the largest stored)")
