"""A campaign's stopping rule in words, and the stored baseline points a candidate config is
tested against (sequential A/B).

The reference is ``Plan.reference`` (``[verify] equivalent_to``, else the baseline). Only
its finished, trusted points serve: a candidate is never stopped early against a point that
could not carry a verdict itself.
"""

from __future__ import annotations

from inferlab.config.campaign import CampaignFile
from inferlab.config.pattern import closed_concurrency
from inferlab.load.adaptive import BaselineRef, baseline_ref
from inferlab.store import Store

__all__ = ["baseline_refs", "stopping_lines"]


def stopping_lines(camp: CampaignFile, baseline: str, reference: str) -> list[str]:
    """How the load points stop, as the plan prints it (``baseline``: ``Plan.baseline``'s
    name, rechecked; ``reference``: ``Plan.reference``, the sequential A/B's)."""
    ld = camp.load
    again = [
        f"baseline recheck: {baseline} launched again after the last config, every "
        "point re-measured with its first pass's request counts (order effects, drift)"
    ]
    if ld.requests != "auto":
        return again if ld.recheck_baseline else []
    cap = f"max {ld.max_requests}" if ld.max_requests else "no cap"
    dur = f", at most {ld.max_duration_s:g} s" if ld.max_duration_s else ""
    out = [
        f"requests: auto — stop at ±{ld.precision:.0%} (95% interval of median TPOT and output "
        f"throughput), min {ld.min_requests}, {cap}{dur}"
    ]
    if ld.sequential:
        out.append(
            f"sequential A/B vs {reference} (measured to the cap, {ld.max_requests} "
            f"requests a point): {ld.looks} looks, Lan-DeMets O'Brien-Fleming (two-sided 5%), "
            f"equivalence within ±{ld.min_effect:.0%}"
        )
    return out + (again if ld.recheck_baseline else [])


def baseline_refs(store: Store, campaign: str, baseline: str) -> dict[str, BaselineRef]:
    """Label → reference, from the newest trusted run of ``baseline`` at each load point."""
    out: dict[str, BaselineRef] = {}
    for run in reversed(store.runs(campaign=campaign, config=baseline)):
        if run.label in out or run.interrupted or run.trust != "trusted":
            continue
        c = closed_concurrency(run.label)
        if c is None:
            continue
        window = (run.stop or {}).get("window_ns")
        ref = baseline_ref(baseline, store.requests(run.id), window, c)
        if ref is not None:
            out[run.label] = ref
    return out
