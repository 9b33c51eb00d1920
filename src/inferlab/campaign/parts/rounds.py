"""``[load] launches`` and ``max_launches``: every config launched in rounds, then more
launches only while a candidate's verdict is unsettled (issue 42: the launch is a unit of the
design).

Round 1 runs the configs in file order (the baseline first); round 2 in reverse; round 3 in
file order again; and so on to round ``launches``: two configs launched twice read A B B A.
Then, while a candidate's primary verdict (``stats.metrics``' primary metrics: median TPOT and
output throughput) at some load point is not settled (``stats.launch_ab.settled``: claimed, or
equivalent within ``[load] min_effect``, on each side's launches) and the candidate has fewer
than ``max_launches`` launches (its budget), another round: the baseline and the unsettled
candidates, the order alternating on. Which configs an extra round holds is decided from the
launches of the rounds before it only, so a ``--resume`` decides it the same way.

A cell that cannot settle within the budget is not launched for: where the launches so far
project (``LaunchAB.needed``: today's estimate and launch spread held) that settling it would
take more launches a side than ``max_launches``, it is futile (a do-nothing lever read at ±25% a
launch needs ~30 launches a side to be called equivalent within 2%), and the tally says how
many it would take. Stopping for futility never claims anything: it only spends no launches
on a verdict that the budget cannot reach.

Each launch is a real relaunch (stop, start, verify) through ``campaign.pipeline.run_config``;
the runs of round k ≥ 2 carry k (``store.launches.LAUNCH_TAG``), so that the launches are told
apart and ``--resume`` measures in each round only the cells that round has not finished.

With ``[load] interleave``, the baseline's pass just before each candidate is the baseline's
launch of that round, and the baseline's own slot runs in round 1 only. With ``[load]
sequential``, each launch of a candidate is tested against the baseline's newest launch, as a
single launch is. The profiled passes of ``[profile]`` run in round 1 only.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from inferlab.campaign.parts.launch import config_row
from inferlab.campaign.parts.plan import Plan
from inferlab.campaign.parts.stopping import launch_budget
from inferlab.config.resolve import ResolvedConfig
from inferlab.stats.launch_ab import compare_launches, needed_text, settled
from inferlab.stats.launches import launch_estimate, launches_of
from inferlab.stats.metrics import listed
from inferlab.stats.verdict import Verdict
from inferlab.store import Store
from inferlab.store.groups import RunGroup
from inferlab.store.launches import (
    config_runs,
    count_launches,
    launch_cells,
    launch_groups,
    launch_of,
)
from inferlab.store.spreads import prior_spread, spread_key

__all__ = ["Open", "Tally", "budget", "futile", "order", "schedule", "tally", "unsettled"]


#: the most launches of one config: ``max_launches``, by default the larger of ``launches``
#: and ``config.campaign.DEFAULT_LAUNCHES[1]``
budget = launch_budget


def order(configs: Sequence[ResolvedConfig], k: int) -> list[ResolvedConfig]:
    """Round ``k``'s order: file order in odd rounds, reversed in even ones."""
    return list(configs) if k % 2 else list(reversed(configs))


@dataclass(frozen=True)
class Open:
    """A candidate's verdicts not settled yet: (label, metric, verdict) each."""

    config: str
    launches: int  # its launches so far (rounds it was measured in)
    cells: list[tuple[str, str, Verdict]]

    def describe(self) -> str:
        """ "fast (2 launches): C=1 tpot_ms ×1.043 [0.912, 1.193]"."""
        what = "; ".join(f"{lb} {m} {_ratio(v)}" for lb, m, v in self.cells[:3])
        more = f" (+{len(self.cells) - 3} more)" if len(self.cells) > 3 else ""
        return f"{self.config} ({_n(self.launches)}): {what}{more}"

    def reachable(self, top: int) -> Open:
        """The cells that ``top`` launches a side could settle (``futile`` the others)."""
        return Open(self.config, self.launches, [x for x in self.cells if not futile(x[2], top)])


def futile(v: Verdict, top: int) -> bool:
    """Whether ``v`` would take more than ``top`` launches a side to settle (its projection)."""
    return v.needed is not None and v.needed > top


def _open_text(cells: Sequence[tuple[str, str, Verdict]]) -> str:
    """ "C=8 tpot_ms (about 31 launches a side would settle it)", each cell."""
    return ", ".join(
        f"{lb} {m}" + (f" ({needed_text(v.needed)})" if v.needed is not None else "")
        for lb, m, v in cells
    )


def _n(k: int) -> str:
    return f"{k} launch" + ("" if k == 1 else "es")


def _ratio(v: Verdict) -> str:
    r = v.ratio
    if math.isnan(r.low) or math.isnan(r.high):
        return f"×{r.estimate:.3f} (undecided)"
    return f"×{r.estimate:.3f} [{r.low:.3f}, {r.high:.3f}]"


def _groups(
    store: Store, plan: Plan, cfg: ResolvedConfig, before: int
) -> dict[str, list[RunGroup]]:
    """Label → the launches of ``cfg`` (its current content: its config row) there, from the
    rounds before ``before``."""
    with store.transaction():
        gid = config_row(store, plan.campaign, cfg)
    runs = config_runs(store, plan.campaign.campaign.name, gid)
    runs = [r for r in runs if launch_of(r.environment) < before]
    return {lb: cs[0] for lb, cs in launch_groups(store, runs).items() if cs}


def verdicts(
    store: Store, plan: Plan, cfg: ResolvedConfig, before: int
) -> list[tuple[str, str, Verdict]]:
    """``cfg``'s launch-level verdict against the baseline at each load point both have, for each
    primary metric, from the rounds before ``before``, as ``compare`` decides it: the prior
    spread is the campaign's other configs launched more than once there pooled with the
    spreads stored for this engine, model and host by other campaigns (``store.spreads``)."""
    metrics = [m.name for m in listed(lambda m: m.primary)]
    base = _groups(store, plan, plan.baseline, before)
    cand = _groups(store, plan, cfg, before)
    name = plan.campaign.campaign.name
    earlier = [
        r for r in store.runs(campaign=name, purpose=None) if launch_of(r.environment) < before
    ]
    pooled = launches_of(launch_groups(store, earlier), metrics)
    ld = plan.campaign.load
    alpha = ld.alpha
    out: list[tuple[str, str, Verdict]] = []
    for label in [p.label for p in plan.points if p.label in base and p.label in cand]:
        ids = {r.id for g in (*base[label], *cand[label]) for r in g.runs}
        for m in metrics:
            b = [e for g in base[label] if (e := launch_estimate(m, g)) is not None]
            c = [e for g in cand[label] if (e := launch_estimate(m, g)) is not None]
            if not b or not c:
                continue
            own = pooled.spread(label, m, without=ids)
            key = spread_key(base[label][0].runs[0])
            prior = prior_spread(store, key, label, m, own, campaign=name)
            v = compare_launches(m, b, c, prior=prior, alpha=alpha, min_effect=ld.min_effect)
            out.append((label, m, v))
    return out


def launch_count(store: Store, plan: Plan, cfg: ResolvedConfig, before: int = 1 << 30) -> int:
    """How many rounds before ``before`` measured ``cfg`` (its launches of the rounds)."""
    with store.transaction():
        gid = config_row(store, plan.campaign, cfg)
    return sum(1 for k in launch_cells(store, plan.campaign.campaign.name, gid) if k < before)


def unsettled(store: Store, plan: Plan, before: int, skip: Collection[str] = ()) -> list[Open]:
    """The candidates (not the baseline, not in ``skip``) whose verdict at some point is not
    settled on the launches of the rounds before ``before``, in file order."""
    out: list[Open] = []
    for cfg in plan.configs:
        if cfg.name == plan.baseline.name or cfg.name in skip:
            continue
        cells = [x for x in verdicts(store, plan, cfg, before) if not settled(x[2])]
        if cells:
            out.append(Open(cfg.name, launch_count(store, plan, cfg, before), cells))
    return out


def schedule(
    plan: Plan, store: Store, failed: set[str]
) -> Iterator[tuple[int, list[ResolvedConfig], str]]:
    """Each round as (k, its configs in order, why it runs: "" for rounds 1..launches), lazily:
    an extra round is decided when the one before it has run. ``failed``: configs that failed
    in this run (read as each round is decided): not launched again."""
    ld = plan.campaign.load
    top = budget(ld)
    k = 1
    while True:
        keep = [c for c in plan.configs if c.name not in failed]
        why = ""
        if k > ld.launches:
            if top <= ld.launches:  # no budget beyond the rounds: nothing to decide
                return
            todo = [o.reachable(top) for o in unsettled(store, plan, k, failed)]
            todo = [o for o in todo if o.cells and o.launches < top]
            if not todo:
                return
            names = {plan.baseline.name} | {o.config for o in todo}
            keep = [c for c in keep if c.name in names]
            why = "unsettled: " + " | ".join(o.describe() for o in todo)
        if ld.interleave and k > 1:  # its pass before each candidate is its launch
            keep = [c for c in keep if c.name != plan.baseline.name]
        if not keep:
            return
        yield k, order(keep, k), why
        k += 1


@dataclass(frozen=True)
class Tally:
    """How many launches a config used and why it stopped (said and stored after the run)."""

    config: str
    launches: int
    stopped: str

    def line(self) -> str:
        return f"{self.config}: {_n(self.launches)} — {self.stopped}"


def tally(store: Store, plan: Plan, failed: set[str]) -> list[Tally]:
    """Each config's launches (the most at any of its points, trusted or not: the baseline's
    interleaved passes count) and why no more were run: settled, the budget spent, no
    verdict to settle (no trusted point beside the baseline's), or failed."""
    top = budget(plan.campaign.load)
    out: list[Tally] = []
    for cfg in plan.configs:
        with store.transaction():
            gid = config_row(store, plan.campaign, cfg)
        n = count_launches(config_runs(store, plan.campaign.campaign.name, gid))
        cells = [] if cfg.name == plan.baseline.name else verdicts(store, plan, cfg, 1 << 30)
        open_ = [x for x in cells if not settled(x[2])]
        if cfg.name in failed:  # launched (and stopped) with no run stored: one launch
            n, why = max(n, 1), "failed: not launched again"
        elif cfg.name == plan.baseline.name:
            why = "the baseline: launched beside the candidates"
        elif not cells:
            why = "no verdict to settle: no trusted point beside the baseline's"
        elif open_:  # stopped at the budget, or before it where the budget could not settle it
            head = "budget spent" if n >= top else "beyond the budget"
            why = f"{head} ([load] max_launches = {top}), unsettled at {_open_text(open_)}"
        else:
            why = "settled"
        out.append(Tally(cfg.name, n, why))
    return out
