"""A campaign's stopping rule in words, and the stored baseline points a candidate config is
tested against (sequential A/B).

The reference is ``Plan.reference`` (``[verify] equivalent_to``, else the baseline). Only
its finished, trusted points serve: a candidate is never stopped early against a point that
could not carry a verdict itself.
"""

from __future__ import annotations

from dataclasses import replace

from inferlab.config.campaign import DEFAULT_LAUNCHES, CampaignFile, LoadSection
from inferlab.config.pattern import closed_concurrency
from inferlab.load.adaptive import STOPPING_RULES, BaselineRef, baseline_ref
from inferlab.stats.launches import launches_of
from inferlab.store import Store
from inferlab.store.launches import campaign_launches

__all__ = ["baseline_refs", "launch_budget", "stopping_lines"]


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
    top = launch_budget(ld)
    more = f", then again while a candidate's verdict is unsettled, {top} at most"
    rounds = [
        f"launches: each config {ld.launches}× in rounds of alternating order (A B B A)"
        + (more if top > ld.launches else "")
        + " (campaign.rounds)"
    ]
    out += rounds if top > 1 else []
    return out + (between if ld.interleave else []) + (again if ld.recheck_baseline else [])


def launch_budget(load: LoadSection) -> int:
    """The most launches of one config (``campaign.parts.rounds``): ``max_launches``, by default the
    larger of ``launches`` and ``DEFAULT_LAUNCHES[1]``."""
    return load.max_launches or max(load.launches, DEFAULT_LAUNCHES[1])


def baseline_refs(store: Store, campaign: str, baseline: str) -> dict[str, BaselineRef]:
    """Label → reference, from the newest trusted run of ``baseline`` at each load point (its
    first pass or, with ``[load] interleave``, the pass measured just before the candidate),
    with the launch-to-launch spread there so far (configs launched more than once)."""
    out: dict[str, BaselineRef] = {}
    launches = launches_of(campaign_launches(store, campaign), ("tpot_ms", "output_tok_s"))
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
            out[run.label] = replace(ref, launch=launches.at(run.label))
    return out
