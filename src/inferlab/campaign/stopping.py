"""A campaign's stopping rule in words, and the stored baseline points a candidate config is
tested against (sequential A/B).

The reference is ``Plan.reference`` (``[verify] equivalent_to``, else the baseline). Only
its finished, trusted points serve: a candidate is never stopped early against a point that
could not carry a verdict itself.
"""

from __future__ import annotations

from inferlab.config.campaign import CampaignFile
from inferlab.config.pattern import closed_concurrency
from inferlab.load.adaptive import STOPPING_RULES, BaselineRef, baseline_ref
from inferlab.store import Store

__all__ = ["baseline_refs", "stopping_lines"]


def stopping_lines(camp: CampaignFile, baseline: str, reference: str) -> list[str]:
    """How the load points stop, as the plan prints it: each kind of ``STOPPING_RULES`` in
    use, then the recheck (``baseline``: ``Plan.baseline``'s name, rechecked; ``reference``:
    ``Plan.reference``, the sequential A/B's)."""
    ld = camp.load
    again = [
        f"baseline recheck: {baseline} launched again after the last config, every "
        "point re-measured with its first pass's request counts (order effects, drift)"
    ]
    between = [
        f"interleave: {baseline} launched again and measured just before each candidate after "
        "the first (baseline, A, baseline, B, ...); each verdict against its nearest pass"
    ]
    out = [line for kind in STOPPING_RULES for line in kind.plan_lines(ld, reference)]
    return out + (between if ld.interleave else []) + (again if ld.recheck_baseline else [])


def baseline_refs(store: Store, campaign: str, baseline: str) -> dict[str, BaselineRef]:
    """Label → reference, from the newest trusted run of ``baseline`` at each load point (its
    first pass or, with ``[load] interleave``, the pass measured just before the candidate)."""
    out: dict[str, BaselineRef] = {}
    runs = store.runs(campaign=campaign, config=baseline, purpose=None)
    for run in reversed([r for r in runs if r.purpose in ("measure", "interleave")]):
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
