"""The baseline recheck read back: its first pass and its recheck, grouped by load point.
The recheck's runs have ``runs.purpose = 'recheck'`` (measured after every other config,
``[load] recheck_baseline``); ``stats.recheck`` judges whether the baseline drifted."""

from __future__ import annotations

from inferlab.store.db import Store
from inferlab.store.groups import RunGroup, group_runs

__all__ = ["recheck_groups"]


def recheck_groups(
    store: Store, campaign: str, baseline: str
) -> list[tuple[str, RunGroup, RunGroup]]:
    """(label, first pass, recheck) of each rechecked load point of ``baseline``, in the
    recheck's run order (none when it was not rechecked). Only first-pass runs of the content
    the recheck measured (the same config hash) count."""
    again = [
        r
        for r in store.runs(campaign=campaign, config=baseline, purpose="recheck")
        if not r.interrupted
    ]
    if not again:
        return []
    hashes = {r.config_hash for r in again}
    first = [
        r
        for r in store.runs(campaign=campaign, config=baseline)
        if not r.interrupted and r.config_hash in hashes
    ]
    a = group_runs(store, first, lambda r: r.label)
    b = group_runs(store, again, lambda r: r.label)
    return [(lb, a[lb], b[lb]) for lb in b if lb in a]
