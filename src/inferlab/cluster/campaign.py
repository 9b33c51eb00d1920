"""``inferlab run CAMPAIGN --ray ADDRESS``: the configs of a campaign side by side on a cluster.

The plan, the cells, ``--resume`` and what is stored are those of ``inferlab run``
(:mod:`inferlab.campaign.drivers.runner`); what changes is where and when. Every config asks Ray for
a ``STRICT_PACK`` placement group (its server's GPUs and CPUs, its client's CPUs, one node)
and runs as soon as Ray grants it, beside the others; Ray queues what does not fit yet. Only
this driver writes the store. A config no node can hold is refused before anything starts.
With ``sequential = true`` each candidate waits for the reference's cells and is measured by
the sequential A/B against them, as on one host. ``run_plan_ray`` runs a plan already made
(``optimize --ray`` derives one per batch of trials).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from inferlab.campaign.context import CampaignEvents, ConfigOutcome
from inferlab.campaign.drivers.runner import CampaignResult, check_resume, done_cells
from inferlab.campaign.parts.launch import campaign_lock, config_row
from inferlab.campaign.parts.plan import Plan, make_plan, select_configs
from inferlab.cluster.cells import Cell
from inferlab.cluster.connect import alive_nodes, connect
from inferlab.cluster.placement import Need, check_fit, config_need, fits_at_once, node_fits
from inferlab.cluster.shared import Shared
from inferlab.cluster.task import ConfigRun, State
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import ConfigError
from inferlab.store import Store

__all__ = [
    "check_cluster_plan",
    "check_plan",
    "placement_lines",
    "run_campaign_ray",
    "run_plan_ray",
    "side_by_side",
]

#: seconds a config may wait for a free node before the user is told
WAIT_NOTICE_S = 30.0


def _absolute_output(camp: CampaignFile) -> CampaignFile:
    """The campaign with its output directory absolute (actors write logs there on their node,
    whatever their working directory)."""
    out = camp.output_dir.resolve()
    return camp.model_copy(update={"campaign": camp.campaign.model_copy(update={"output": out})})


def _needs(plan: Plan) -> dict[str, Need]:
    for c in plan.configs:
        if not get_engine(c.engine).launchers:
            raise ConfigError(
                f"{plan.path}: engine.kind {c.engine!r}: --ray places the servers it launches; "
                "an endpoint that already runs needs no cluster (run without --ray)"
            )
        if not c.is_local:
            raise ConfigError(
                f"{plan.path}: engine.host {c.host!r}: under --ray, Ray picks the node; "
                "remove engine.host"
            )
    return {c.name: config_need(c, plan.campaign.cluster) for c in plan.configs}


def check_cluster_plan(
    path: str | Path, address: str, only: Sequence[str] = ()
) -> tuple[Plan, dict[str, Need]]:
    """Load the plan (the configs in ``only``, or all), connect, and refuse configs that no
    alive node can hold."""
    plan = select_configs(make_plan(path), only)
    return plan, check_plan(plan, address)


def check_plan(plan: Plan, address: str) -> dict[str, Need]:
    """Connect, and refuse a plan whose configs cannot run on the cluster (or that no alive
    node can hold); each config's need."""
    if plan.campaign.load.interleave:  # its order (baseline, A, baseline, B) is one server's
        raise ConfigError(
            f"{plan.path}: load.interleave: not with --ray, where configs run side by side; "
            "run it without --ray, or set interleave = false"
        )
    ld = plan.campaign.load
    asked = {"launches", "max_launches"} & ld.model_fields_set  # a default is not asked for
    if asked and max(ld.launches, ld.max_launches or 1) > 1:  # rounds: one server's order
        raise ConfigError(
            f"{plan.path}: load.launches: rounds of launches are not run with "
            "--ray (configs side by side): run without --ray, or launches = 1"
        )
    needs = _needs(plan)
    ray = connect(address)
    check_fit(list(needs.values()), alive_nodes(ray), str(plan.path))
    return needs


def side_by_side(needs: dict[str, Need], address: str) -> int:
    """How many configs of the largest of ``needs`` the cluster's alive nodes hold at once."""
    big = max(needs.values(), key=lambda n: (n.gpus, n.cpus))
    return fits_at_once(big, alive_nodes(connect(address)))


def placement_lines(needs: dict[str, Need]) -> list[str]:
    """One line per config: the placement group it asks for."""
    return [
        f"[ray] {name}: STRICT_PACK {need.bundles()} ({need.describe()})"
        for name, need in needs.items()
    ]


def run_campaign_ray(
    path: str | Path,
    *,
    store: Store,
    address: str,
    events: CampaignEvents | None = None,
    resume: bool = False,
    no_verify: bool = False,
    only: Sequence[str] = (),
    poll_s: float = 0.5,
) -> CampaignResult:
    """Run every config of the campaign (or those named in ``only``) on the Ray cluster at
    ``address`` (see the module docstring); the result lists the configs in file order."""
    plan, needs = check_cluster_plan(path, address, only)
    hint = f"inferlab run {plan.path} --ray {address} --resume"
    return run_plan_ray(
        plan,
        store=store,
        address=address,
        needs=needs,
        events=events,
        resume=resume,
        no_verify=no_verify,
        poll_s=poll_s,
        resume_hint=hint,
    )


def run_plan_ray(
    plan: Plan,
    *,
    store: Store,
    address: str,
    needs: dict[str, Need] | None = None,
    events: CampaignEvents | None = None,
    resume: bool = False,
    no_verify: bool = False,
    poll_s: float = 0.5,
    resume_hint: str = "",
) -> CampaignResult:
    """Run the configs of ``plan`` on the Ray cluster at ``address`` (``needs``: from
    :func:`check_plan`, else checked here); ``resume``: skip the cells already stored (else
    a campaign with runs is refused)."""
    events = events or CampaignEvents()
    needs = check_plan(plan, address) if needs is None else needs
    name = plan.campaign.campaign.name
    check_resume(plan, store, resume)
    camp = _absolute_output(plan.campaign)
    sh = Shared(
        connect(address),
        plan.path,
        camp,
        store,
        events,
        no_verify,
        resume_hint=resume_hint or f"inferlab run {plan.path} --ray {address} --resume",
        take_recon=not (resume and store.analyses("recon", campaign=name)),
        baseline=plan.baseline,
        reference=plan.reference if camp.load.sequential else "",
    )
    result = CampaignResult(name, [])
    with campaign_lock(camp):
        runs, outcomes = _queue(sh, plan, needs, resume)
        try:
            _drive(sh, list(runs.values()), poll_s)
        except KeyboardInterrupt:
            result.interrupted = True
            for run in runs.values():
                if not run.done:
                    run.interrupt()
    for run in runs.values():
        assert run.outcome is not None
        outcomes[run.name] = run.outcome
    result.outcomes = [outcomes[c.name] for c in plan.configs]
    result.interrupted = result.interrupted or any(
        o.status == "interrupted" for o in result.outcomes
    )
    return result


def _queue(
    sh: Shared, plan: Plan, needs: dict[str, Need], resume: bool
) -> tuple[dict[str, ConfigRun], dict[str, ConfigOutcome]]:
    """A ``ConfigRun`` for every config with cells to measure (each told the run it must
    match, when that one runs too); the outcomes of those skipped (every cell measured)."""
    store, name = sh.store, plan.campaign.campaign.name
    order = [(p.label, t) for p in plan.points for t in range(plan.trials)]
    queued: list[tuple[int, ResolvedConfig, int, list[Cell]]] = []
    skipped: dict[str, ConfigOutcome] = {}
    for i, cfg in enumerate(plan.configs):
        with store.transaction():
            gid = config_row(store, plan.campaign, cfg)  # as inferlab run names it
        done = done_cells(store, name, gid) if resume else set()
        todo = [c for c in order if c not in done]
        if todo:
            queued.append((i, cfg, gid, todo))
            continue
        skipped[cfg.name] = ConfigOutcome(cfg.name, "skipped", "every cell already measured")
        sh.events.config_done(skipped[cfg.name])
    runs = {
        cfg.name: ConfigRun(sh, cfg, gid, todo, needs[cfg.name], i, len(queued))
        for i, cfg, gid, todo in queued
    }
    ref = runs.get(sh.camp.verify.equivalent_to or "")
    ab = runs.get(sh.reference)
    for run in runs.values():
        run.reference = ref if ref is not run else None
        run.ab_reference = ab if ab is not run else None
    return runs, skipped


def _drive(sh: Shared, runs: list[ConfigRun], poll_s: float) -> None:
    """Wait on every config's pending actor call at once; hand each result to its config."""
    last_watch = 0.0
    while not all(r.done for r in runs):
        free = _may_place(runs, sh.baseline.name if sh.baseline else "")
        for r in runs:
            r.tick(r in free)
        if time.monotonic() - last_watch > 5.0:
            _watch_placement(sh, runs)
            last_watch = time.monotonic()
        waiting = {r.pending[0]: r for r in runs if r.pending is not None}
        if not waiting:
            time.sleep(poll_s)
            continue
        ready, _ = sh.ray.wait(list(waiting), num_returns=1, timeout=poll_s)
        for ref in ready:
            run = waiting[ref]
            try:
                value = sh.ray.get(ref)
            except Exception as exc:  # a Ray error: the actor died, or raised
                run.resolve(error=exc)
            else:
                run.resolve(value)


def _may_place(runs: list[ConfigRun], baseline: str) -> set[ConfigRun]:
    """The configs not placed yet that may ask for a node now. One that installs files (or
    tunes) runs alone: the engine package it changes is the one every config on its node
    reads. It waits until the others that run have finished, and the configs after it (in
    file order, the reference and the baseline first: ``from-log`` tunes from its launch
    log) wait for it."""
    held = [r for r in runs if r.state not in (State.NEW, State.DONE)]
    if any(_installs(r) for r in held):
        return set()
    refs = {r.reference for r in runs if r.reference is not None}
    refs |= {r.ab_reference for r in runs if r.ab_reference is not None}
    free: set[ConfigRun] = set()
    for r in sorted(runs, key=lambda r: r not in refs and r.name != baseline):
        if r.state is not State.NEW:
            continue
        if _installs(r):
            if not held and not free:
                free.add(r)
            break
        free.add(r)
    return free


def _installs(run: ConfigRun) -> bool:
    return bool(run.cfg.files or run.cfg.tune)


def _watch_placement(sh: Shared, runs: list[ConfigRun]) -> None:
    """Configs waiting for a node: fail those no alive node can hold any more (a node was
    lost), and say once which ones wait for others to finish."""
    placing = [r for r in runs if r.state is State.PLACING]
    if not placing:
        return
    nodes = alive_nodes(sh.ray)
    for r in placing:
        if not any(node_fits(r.need, n) for n in nodes):
            r.fail_placement(f"no alive node can hold it any more ({r.need.describe()})")
        elif not r.warned_wait and time.monotonic() - r.since > WAIT_NOTICE_S:
            r.warned_wait = True
            sh.events.message(
                f"{r.name}: waiting for a node with {r.need.describe()} free "
                "(the configs running now hold them)"
            )
