"""``inferlab run CAMPAIGN.toml``: every config launched, verified, measured, stored, stopped.

First, holding the campaign's lock: orphan servers of a runner that died are stopped and its
pending kernel-config files restored (``campaign.parts.orphans``), and what the store knows is told
(``campaign.parts.notes``). Then, per config, ``campaign.pipeline.run_config`` over the
stage table (``campaign.stages.table``): tuned files made and ``files`` installed → launch →
verify → lever evidence against the baseline; then the sweep pass (``campaign.passes``): (warmup) →
every load point × trial → the profiled passes of ``[profile]`` → scrape; then the stages
undone in reverse: stop → drain → files restored. Every finished load point is committed at
once. A config that fails to launch or verify is stored with its classified failure, log tail
and remedy, and the campaign goes on. ``resume`` skips finished cells of configs whose content
hash is unchanged (a changed config is a new config: its old results are never mixed in).
Only one server of a campaign runs at a time. With ``[load] launches`` (and
``max_launches``) every config is launched in rounds of alternating order, then again while a
candidate's verdict is unsettled (``campaign.parts.rounds``); each round's outcomes are named
"CONFIG (launch K)" and, with a budget above one launch, each config's launches and why it
stopped are said and stored (analysis "launches"). With ``[load] interleave``, the baseline is
measured again just before each candidate after the first (``campaign.drivers.interleave``). With
``[load] recheck_baseline``, the baseline is launched once more after the last config and
every point rechecked (``campaign.parts.recheck``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from inferlab import interrupts
from inferlab.campaign import passes
from inferlab.campaign.context import (
    CampaignEvents,
    ConfigContext,
    ConfigOutcome,
    Held,
    Launcher,
    RunContext,
)
from inferlab.campaign.drivers.interleave import interleave_step, needs_pass
from inferlab.campaign.parts import profiled, rounds
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.files import target_dir
from inferlab.campaign.parts.launch import SUBPROCESS, campaign_lock, config_row
from inferlab.campaign.parts.notes import plan_notes
from inferlab.campaign.parts.orphans import recover_campaign
from inferlab.campaign.parts.plan import Plan, make_plan, select_configs
from inferlab.campaign.parts.predictions import predict_now
from inferlab.campaign.parts.recheck import recheck_todo
from inferlab.campaign.parts.recon import store_recon
from inferlab.campaign.parts.spreads import record_spreads
from inferlab.campaign.pipeline import run_config
from inferlab.config.resolve import ResolvedConfig
from inferlab.errors import ConfigError
from inferlab.stats.launches import launches_of
from inferlab.stats.metrics import listed
from inferlab.stats.recheck import recheck_points
from inferlab.store import Store
from inferlab.store.launches import campaign_launches, launch_cells
from inferlab.store.recheck import recheck_groups
from inferlab.verify.lmeval import harness_python

__all__ = ["CampaignResult", "check_resume", "done_cells", "run_campaign", "run_plan"]


@dataclass
class CampaignResult:
    campaign: str
    outcomes: list[ConfigOutcome]
    interrupted: bool = False
    #: each config's launches and why it stopped (``[load] max_launches`` > 1)
    launches: list[rounds.Tally] = field(default_factory=list)


def done_cells(store: Store, campaign: str, config_id: int) -> set[tuple[str, int]]:
    """(label, trial) cells of a config's first launch already measured (what ``--resume``
    skips in round 1; ``store.launches.launch_cells`` has every round's)."""
    return launch_cells(store, campaign, config_id).get(1, set())


def run_campaign(
    path: str | Path,
    *,
    store: Store,
    events: CampaignEvents | None = None,
    resume: bool = False,
    no_verify: bool = False,
    only: Sequence[str] = (),
    launcher: Launcher = SUBPROCESS,
    clock: ModelClock | None = None,
) -> CampaignResult:
    """Run every config of the campaign (or those named in ``only``, in file order); see the
    module docstring for the order and rules. ``launcher``: where the servers run
    (``campaign.parts.launch``: subprocesses by default); ``clock``: the reference engine's points
    read on its model clock, with an injected client lag (``campaign.parts.clock``)."""
    plan = select_configs(make_plan(path), only)
    return run_plan(
        plan,
        store=store,
        events=events,
        resume=resume,
        no_verify=no_verify,
        launcher=launcher,
        clock=clock,
    )


def run_plan(
    plan: Plan,
    *,
    store: Store,
    events: CampaignEvents | None = None,
    resume: bool = False,
    no_verify: bool = False,
    launcher: Launcher = SUBPROCESS,
    clock: ModelClock | None = None,
    measure: passes.PassFactory = passes.sweep,
) -> CampaignResult:
    """``run_campaign`` of a plan already made (``optimize`` makes its trials' plans);
    ``measure``: each config's pass (the sweep; ``optimize``'s capacity objective: capacity)."""
    events = events or CampaignEvents()
    camp = plan.campaign
    name = camp.campaign.name
    _check_start(plan, store, resume, no_verify)
    interrupts.clear()  # an earlier run's Ctrl-C in this process does not shorten this one's stops
    run = RunContext(
        camp,
        plan.path,
        plan.baseline,
        plan.reference,
        plan.cpus,
        store,
        events.message,
        events.message,
        events,
        no_verify,
        held=functools.partial(Held, launcher=launcher, clock=clock),
    )
    result = CampaignResult(name, [])
    with campaign_lock(camp):
        for line in recover_campaign(plan.campaign.output_dir, store) + plan_notes(plan, store):
            events.message(line)
        if not (resume and store.analyses("recon", campaign=name)):
            store_recon(store, name, plan.configs, events.message)
        walk = _Walk(plan, run, result, resume, measure)
        for k, configs, why in rounds.schedule(plan, store, walk.failed):
            if k > 1 or camp.load.launches > 1:
                names = ", ".join(c.name for c in configs)
                events.message(f"round {k} (launch {k} of {names})" + (f"; {why}" if why else ""))
            for i, cfg in enumerate(configs):
                walk.config(k, i, len(configs), cfg)
                if result.interrupted:
                    break
            if result.interrupted:
                break
        if rounds.budget(camp.load) > 1 and not result.interrupted:
            _tell_launches(plan, run, result, walk.failed)
        if camp.load.recheck_baseline and not result.interrupted:
            _recheck_step(plan, run, result)
        if (n := record_spreads(store, name)) and not result.interrupted:
            events.message(f"launch spreads kept for this engine, model and host: {n}")
    return result


@dataclass
class _Walk:
    """The configs of a run, round by round (``campaign.parts.rounds``): what was measured last (the
    interleave's ``previous``) and the configs that failed (not launched again)."""

    plan: Plan
    run: RunContext
    result: CampaignResult
    resume: bool
    measure: passes.PassFactory
    previous: tuple[str, set[tuple[str, int]]] | None = None  # what was measured last
    failed: set[str] = field(default_factory=set)

    def config(self, k: int, i: int, total: int, cfg: ResolvedConfig) -> None:
        """``cfg``'s launch ``k``: its cells that round has not measured (all without
        ``resume``), after the baseline's interleaved pass where one is due."""
        plan, run, result, store = self.plan, self.run, self.result, self.run.store
        assert store is not None
        with store.transaction():
            gid = config_row(store, plan.campaign, cfg)
        cells = {(p.label, t) for p in plan.points for t in range(plan.trials)}
        todo = cells - launch_cells(store, run.name, gid).get(k, set()) if self.resume else cells
        if not todo and (k > 1 or not profiled.profiles_missing(plan.campaign, cfg, store, gid)):
            out = ConfigOutcome(_named(cfg.name, k), "skipped", "every cell already measured")
            result.outcomes.append(out)
            run.events.config_done(out)
            return
        if needs_pass(plan, cfg.name, self.previous, todo):
            self.previous = _interleave(plan, run, result, cfg.name, todo, k)
            if result.interrupted:
                return
        run.events.config_started(cfg, i, total)
        cx = ConfigContext(run, cfg, gid, run.held(), launch=k)
        out = run_config(cx, self.measure(plan.points, todo))
        out.config = _named(cfg.name, k)
        result.outcomes.append(out)
        run.events.config_done(out)
        if out.status == "measured" or out.run_ids:  # else nothing of it was measured
            self.previous = (cfg.name, todo) if out.status == "measured" else None
        if out.status not in ("measured", "interrupted"):
            self.failed.add(cfg.name)
        if out.status == "measured" and not predict_now(store, run.name, run.events):
            result.interrupted = True
        if out.status == "interrupted":
            result.interrupted = True


def _named(config: str, k: int) -> str:
    """A config's outcome name in round ``k``: "fast", "fast (launch 2)"."""
    return config if k == 1 else f"{config} (launch {k})"


def _tell_launches(plan: Plan, run: RunContext, result: CampaignResult, failed: set[str]) -> None:
    """Each config's launches and why it stopped: said, kept in ``result`` and stored (the
    campaign's "launches" analysis)."""
    assert run.store is not None
    result.launches = rounds.tally(run.store, plan, failed)
    for t in result.launches:
        run.say(t.line())
    data = {
        "budget": rounds.budget(plan.campaign.load),
        "launches": plan.campaign.load.launches,
        "configs": [asdict(t) for t in result.launches],
    }
    with run.store.transaction():
        run.store.add_analysis("launches", "rounds", data, campaign=run.name)


def _interleave(
    plan: Plan,
    run: RunContext,
    result: CampaignResult,
    candidate: str,
    todo: set[tuple[str, int]],
    k: int,
) -> tuple[str, set[tuple[str, int]]] | None:
    """The baseline's pass before ``candidate`` in round ``k``
    (``campaign.drivers.interleave``), told and kept in ``result``; what it measured (None
    when it did not finish)."""
    out = interleave_step(plan, run, candidate, todo, k)
    if k > 1:
        out.config += f" (launch {k})"
    result.outcomes.append(out)
    run.events.config_done(out)
    result.interrupted = out.status == "interrupted"
    return (plan.baseline.name, todo) if out.status == "measured" else None


def check_resume(plan: Plan, store: Store, resume: bool) -> None:
    """A campaign with runs continues only with ``--resume`` (``run`` and ``run --ray``)."""
    name = plan.campaign.campaign.name
    existing = store.runs(campaign=name)
    if existing and not resume:
        raise ConfigError(
            f"campaign {name!r} already has {len(existing)} runs in {store.path}: "
            "use --resume to continue it, or give the campaign another name"
        )


def _check_start(plan: Plan, store: Store, resume: bool, no_verify: bool) -> None:
    """Before anything runs: a campaign with runs needs ``--resume``; every package the
    files go into is found; ``[verify] eval`` has a Python with the harness."""
    check_resume(plan, store, resume)
    for c in plan.configs:
        for kind in sorted({*c.files, *c.tune}):
            target_dir(c, kind)
    verify = plan.campaign.verify
    if verify.eval is not None and verify.enabled and not no_verify:
        harness_python(verify.eval)


def _recheck_step(plan: Plan, run: RunContext, result: CampaignResult) -> None:
    """The baseline launched again and rechecked at every point it has measured and not
    rechecked yet (``campaign.parts.recheck``); its outcome is "BASELINE (recheck)"."""
    base, store = plan.baseline, run.store
    if base.name not in {c.name for c in plan.configs} or store is None:
        return
    with store.transaction():
        gid = config_row(store, plan.campaign, base)
    todo = recheck_todo(store, gid, plan.points, plan.trials)
    if not todo:
        return
    run.say(f"{base.name}: launched again to recheck {', '.join(todo)} (order effects)")
    cx = ConfigContext(run, base, gid, run.held())
    out = run_config(cx, passes.recheck(plan.points, todo))
    out.config = f"{base.name} (recheck)"
    if out.status == "measured":  # told with the campaign's own minimum effect
        pairs = recheck_groups(store, run.name, base.name)
        primary = [m.name for m in listed(lambda m: m.primary)]
        launch = launches_of(campaign_launches(store, run.name), primary)
        points = recheck_points(pairs, min_effect=plan.campaign.load.min_effect, launch=launch)
        out.message = "; ".join(p.line() for p in points) or out.message
    result.outcomes.append(out)
    run.events.config_done(out)
    result.interrupted = out.status == "interrupted"
