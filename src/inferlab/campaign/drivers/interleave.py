"""``[load] interleave``: the baseline measured again just before each candidate.

The order of work is baseline, A, baseline, B, baseline, C, ...: before every candidate after
the first, the baseline is launched again (verified again) and measured at the cells the
candidate is about to be measured at, as its first pass was (to the cap when the A/B is
sequential). The first candidate follows the baseline's own first pass, so it needs none;
nor does a candidate after one that measured nothing (it failed to launch or verify); a
``--resume`` (or ``--only``) that did not just measure the baseline measures it again first.

Why passes, not A-B-A-B rounds at each point: only one server of a campaign runs at a time, so
alternating at each point would relaunch both servers at every point (a vLLM launch is
30-60 s on CPUs, minutes on GPUs). A whole pass beside each candidate keeps the launches at
two per candidate and the baseline minutes, not the whole campaign, from each candidate.

Each pass is stored as the baseline's runs with ``purpose = 'interleave'``, tagged with the
candidate (``store.interleave``): nothing is lost, and the first pass alone stays the
baseline's row of every table. The candidate's sequential A/B is tested against the newest
pass (``campaign.parts.stopping.baseline_refs``); ``compare``, ``report`` and ``levers`` judge it
against its nearest pass (``store.interleave.nearest_pass``) and say which. With
``[load] launches`` ≥ 2 (``campaign.parts.rounds``) each round runs the candidates each after a pass
like this, which is the baseline's launch of that round.
"""

from __future__ import annotations

from inferlab.campaign import passes
from inferlab.campaign.context import ConfigContext, ConfigOutcome, RunContext
from inferlab.campaign.parts.launch import config_row
from inferlab.campaign.parts.plan import Plan
from inferlab.campaign.pipeline import run_config

__all__ = ["interleave_step", "needs_pass"]


def needs_pass(
    plan: Plan,
    candidate: str,
    previous: tuple[str, set[tuple[str, int]]] | None,
    todo: set[tuple[str, int]],
) -> bool:
    """Whether the baseline is measured again before ``candidate``: interleave is on, it is
    not the baseline, and what this run measured last (``previous``: config, cells) is not
    the baseline's own pass at every cell of ``todo``."""
    base = plan.baseline.name
    if not plan.campaign.load.interleave or candidate == base or not todo:
        return False
    return previous is None or previous[0] != base or not todo <= previous[1]


def interleave_step(
    plan: Plan, run: RunContext, candidate: str, todo: set[tuple[str, int]], launch: int = 1
) -> ConfigOutcome:
    """The baseline launched again and measured at ``todo`` just before ``candidate`` (in
    round ``launch`` of ``[load] launches``: its runs tagged with it,
    ``campaign.parts.rounds``); its outcome is "BASELINE (before CANDIDATE)"."""
    base = plan.baseline
    assert run.store is not None  # ``run`` always stores
    with run.store.transaction():
        gid = config_row(run.store, plan.campaign, base)
    labels = sorted({lb for lb, _ in todo})
    run.say(f"{base.name}: launched again before {candidate} ({', '.join(labels)}; interleave)")
    cx = ConfigContext(run, base, gid, run.held(), launch=launch)
    out = run_config(cx, passes.sweep(plan.points, todo, before=candidate))
    out.config = f"{base.name} (before {candidate})"
    return out
