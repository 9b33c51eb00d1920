"""``inferlab run CAMPAIGN.toml``: every config launched, verified, measured, stored, stopped.

First, holding the campaign's lock: orphan servers of a runner that died are stopped and its
pending kernel-config files restored (``campaign.orphans``), and what the store knows is told
(``campaign.notes``). Then, per config: tuned files made and ``files`` installed
(``campaign.files``) → launch → verify → lever evidence against the baseline
(``campaign.applied``) → (warmup) → every load point × trial → the profiled passes of
``[profile]`` (``campaign.capture``) → scrape → stop → drain → files restored
(``campaign.steps``). Every finished load point is committed at once. A config that
fails to launch or verify is stored with its classified failure, log tail and remedy, and the
campaign goes on. ``resume`` skips finished cells of configs whose content hash is unchanged
(a changed config is a new config: its old results are never mixed in). Only one server of a
campaign runs at a time. With ``[load] recheck_baseline``, the baseline is launched once more
after the last config and every point rechecked (``campaign.recheck``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from inferlab.campaign import capture, profiled
from inferlab.campaign.bench import StoreSink, bench_config
from inferlab.campaign.clock import ModelClock
from inferlab.campaign.files import target_dir
from inferlab.campaign.launch import (
    SUBPROCESS,
    Launcher,
    config_row,
    output_dir,
    served_model,
    server_url,
)
from inferlab.campaign.notes import plan_notes
from inferlab.campaign.orphans import recover_campaign
from inferlab.campaign.plan import Plan, make_plan, render_plan, select_configs
from inferlab.campaign.predictions import predict_now
from inferlab.campaign.recheck import RecheckTodo, recheck_pass, recheck_todo
from inferlab.campaign.recon import store_recon
from inferlab.campaign.steps import Held, StepFailed, check_applied, config_files, server_running
from inferlab.campaign.stopping import baseline_name, baseline_refs, sequential_for
from inferlab.campaign.up import campaign_lock, verify_config
from inferlab.campaign.watch import ServerWatch
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import ConfigError, ConnectError, InferlabError, ServerRejected
from inferlab.load.bench import BenchEvents, run_bench
from inferlab.store import Store
from inferlab.store.recheck import recheck_points

#: the plan's names too (``campaign.plan``): the runner is where callers have taken them from
__all__ = [
    "CampaignEvents",
    "CampaignResult",
    "ConfigOutcome",
    "Plan",
    "bench_config",
    "campaign_lock",
    "done_cells",
    "make_plan",
    "render_plan",
    "run_campaign",
    "select_configs",
]


@dataclass
class ConfigOutcome:
    config: str
    status: str  # measured | skipped | launch-failed | verify-failed | interrupted | failed
    message: str = ""
    run_ids: list[int] = field(default_factory=list)
    remedy: str | None = None
    log_tail: list[str] = field(default_factory=list)


@dataclass
class CampaignResult:
    campaign: str
    outcomes: list[ConfigOutcome]
    interrupted: bool = False


class CampaignEvents(BenchEvents):
    """Progress of a campaign (on top of each sweep's own events)."""

    def config_started(self, cfg: ResolvedConfig, index: int, total: int) -> None:
        """A config is about to be launched."""

    def config_done(self, outcome: ConfigOutcome) -> None:
        """A config ended (measured, skipped or failed)."""


def done_cells(store: Store, campaign: str, config_id: int) -> set[tuple[str, int]]:
    """(label, trial) cells of a config already measured (what ``--resume`` skips)."""
    return store.measured_cells(campaign, config_id)


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
    (``campaign.launch``: subprocesses by default); ``clock``: the reference engine's points
    read on its model clock, with an injected client lag (``campaign.clock``)."""
    seams = functools.partial(Held, launcher=launcher, clock=clock)
    events = events or CampaignEvents()
    plan = select_configs(make_plan(path), only)
    camp = plan.campaign
    name = camp.campaign.name
    existing = store.runs(campaign=name)
    if existing and not resume:
        raise ConfigError(
            f"campaign {name!r} already has {len(existing)} runs in {store.path}: "
            "use --resume to continue it, or give the campaign another name"
        )
    for c in plan.configs:  # before anything runs: the package the files go into
        for kind in sorted({*c.files, *c.tune}):
            target_dir(c, kind)
    result = CampaignResult(name, [])
    all_cells = {(p.label, t) for p in plan.points for t in range(plan.trials)}
    with campaign_lock(camp):
        for line in recover_campaign(output_dir(camp), store) + plan_notes(plan, store):
            events.message(line)
        if not (resume and store.analyses("recon", campaign=name)):
            store_recon(store, name, plan.configs, events.message)
        for i, cfg in enumerate(plan.configs):
            with store.transaction():
                gid = config_row(store, camp, cfg)
            todo = all_cells - done_cells(store, name, gid) if resume else set(all_cells)
            if not todo and not profiled.profiles_missing(camp, cfg, store, gid):
                out = ConfigOutcome(cfg.name, "skipped", "every cell already measured")
                result.outcomes.append(out)
                events.config_done(out)
                continue
            events.config_started(cfg, i, len(plan.configs))
            measure = functools.partial(_measure, plan, cfg, gid, todo, store, events, no_verify)
            out = _run_config(cfg.name, measure, seams())
            result.outcomes.append(out)
            events.config_done(out)
            if out.status == "measured" and not predict_now(store, name, events):
                result.interrupted = True
                break
            if out.status == "interrupted":
                result.interrupted = True
                break
        if camp.load.recheck_baseline and not result.interrupted:
            _recheck_step(plan, store, events, no_verify, result, seams())
    return result


def _recheck_step(
    plan: Plan,
    store: Store,
    events: CampaignEvents,
    no_verify: bool,
    result: CampaignResult,
    held: Held,
) -> None:
    """The baseline launched again and rechecked at every point it has measured and not
    rechecked yet (``campaign.recheck``); its outcome is "BASELINE (recheck)"."""
    base = plan.baseline or plan.configs[0]
    if base.name not in {c.name for c in plan.configs}:
        return
    with store.transaction():
        gid = config_row(store, plan.campaign, base)
    todo = recheck_todo(store, gid, plan.points, plan.trials)
    if not todo:
        return
    events.message(f"{base.name}: launched again to recheck {', '.join(todo)} (order effects)")
    measure = functools.partial(
        _measure, plan, base, gid, set(), store, events, no_verify, recheck=todo
    )
    out = _run_config(base.name, measure, held)
    out.config = f"{base.name} (recheck)"
    if out.status == "measured":  # told with the campaign's own minimum effect
        points = recheck_points(store, plan.campaign.campaign.name, base.name,
                                min_effect=plan.campaign.load.min_effect)  # fmt: skip
        out.message = "; ".join(p.line() for p in points) or out.message
    result.outcomes.append(out)
    events.config_done(out)
    result.interrupted = out.status == "interrupted"


@contextlib.contextmanager
def _endpoint(
    plan: Plan, cfg: ResolvedConfig, gid: int, store: Store, events: CampaignEvents, held: Held
) -> Iterator[tuple[str, Path | None]]:
    """(base URL, launch log) of the config's server: launched (with profiling on when
    ``[profile]`` names it) and stopped here, or (kind ``openai``) already running."""
    if get_engine(cfg.engine).launchers:
        launched, note = capture.launch_form(plan.campaign, cfg, store)
        with server_running(
            plan.campaign,
            launched,
            store=store,
            config_id=gid,
            say=events.message,
            held=held,
            extra={"profiling": note} if note else None,
            cpus=plan.cpus,
        ) as server:
            yield server_url(server, cfg), server.spec.log_path
        return
    if not cfg.url:
        raise ConfigError(f"{plan.path}: engine.url: kind {cfg.engine!r} needs the URL")
    yield cfg.url.rstrip("/"), None


def _verified(
    plan: Plan, cfg: ResolvedConfig, url: str, model: str, store: Store, events: CampaignEvents
) -> ConfigOutcome | None:
    """None when the config passed (or is not verified), else its verify-failed outcome."""
    events.message(f"{cfg.name}: verifying ...")
    rep = verify_config(plan.campaign, cfg, url, model, store)
    if rep.passed:
        return None
    fails = "; ".join(f"{c.kind}: {c.message}" for c in rep.failures())
    what = "diverged from the reference" if rep.diverged else "failed verification"
    return ConfigOutcome(
        cfg.name,
        "verify-failed",
        f"{what}: {fails}",
        remedy="fix the config, or --no-verify to measure anyway",
    )


def _run_config(name: str, measure: Callable[[Held], ConfigOutcome], held: Held) -> ConfigOutcome:
    """Config ``name``'s ``measure`` (its server held in ``held``), its failures (and a known
    death of its server) turned into its outcome."""
    try:
        out = measure(held)
    except StepFailed as f:
        out = ConfigOutcome(name, f.status, f.message, remedy=f.remedy, log_tail=list(f.tail))
    except KeyboardInterrupt:
        out = ConfigOutcome(
            name,
            "interrupted",
            "Ctrl-C: the server was stopped; inferlab run --resume continues",
        )
    except InferlabError as exc:
        out = ConfigOutcome(name, "failed", str(exc))
    failure = held.failure
    if failure is not None:  # the server came up, then died of something known
        seen = out.message[:300] + ("…" if len(out.message) > 300 else "")
        out.message = failure.message + (f" — {seen}" if seen else "")
        out.remedy = failure.remedy
        out.log_tail = failure.tail
        if out.status == "measured":
            out.status = "failed"
    return out


def _measure(
    plan: Plan,
    cfg: ResolvedConfig,
    gid: int,
    todo: set[tuple[str, int]],
    store: Store,
    events: CampaignEvents,
    no_verify: bool,
    held: Held,
    recheck: RecheckTodo | None = None,
) -> ConfigOutcome:
    """Files, server, verification, lever evidence, then every load point and the profiled
    passes (``[profile]``), or (``recheck``) the baseline's recheck; each undone on exit."""
    camp = plan.campaign
    base = plan.baseline or plan.configs[0]
    say = events.message
    with (
        config_files(camp, base, cfg, store=store, config_id=gid, say=say) as (cfg, inst),
        _endpoint(plan, cfg, gid, store, events, held) as (url, log),
    ):
        model = served_model(url, cfg.model or "")
        if camp.verify.enabled and not no_verify:
            failed = _verified(plan, cfg, url, model, store, events)
            if failed is not None:
                return failed
        check_applied(
            base, cfg, url=url, log_path=log, installed=inst, store=store, config_id=gid, say=say
        )
        if recheck is not None:
            return _recheck(plan, cfg, gid, url, model, recheck, store, events, held)
        return _sweep(plan, cfg, gid, url, model, todo, store, events, held)


def _sweep(
    plan: Plan,
    cfg: ResolvedConfig,
    gid: int,
    url: str,
    model: str,
    todo: set[tuple[str, int]],
    store: Store,
    events: CampaignEvents,
    held: Held,
) -> ConfigOutcome:
    """The ``todo`` cells of the config's load points, then its profiled passes."""
    camp = plan.campaign
    ref = camp.load.sequential and cfg.name == baseline_name(camp)
    bench = bench_config(camp, url, model, cfg.api or cfg.engine, plan.cpus.client, reference=ref)
    env = {"cpu_split": plan.cpus.to_json()}
    sink = StoreSink(
        store, bench, camp.campaign.name, cfg.name, config_id=gid, environment_extra=env
    )
    refs = {}
    if sequential_for(camp, cfg.name):
        refs = baseline_refs(store, camp.campaign.name, baseline_name(camp))
    watch = [ServerWatch(held.server, cfg.name)] if held.server is not None else []
    clock = [held.clock.sink(url, bench)] if held.clock is not None else []
    try:
        res = (
            run_bench(bench, events, None, [*watch, *clock, sink], cells=todo, baselines=refs)
            if todo
            else None
        )
    except (ServerRejected, ConnectError) as exc:
        return ConfigOutcome(cfg.name, "failed", str(exc), sink.run_ids)
    if watch and watch[0].exited:  # the server exited mid-run: the rest is not measured
        return ConfigOutcome(cfg.name, "failed", watch[0].exited, sink.run_ids)
    if res is not None and res.interrupted:
        return ConfigOutcome(cfg.name, "interrupted", "", sink.run_ids)
    notes = profiled.profile_config(camp, cfg, gid, bench, plan.points, store, events, held.server)
    return ConfigOutcome(cfg.name, "measured", "; ".join(notes), sink.run_ids)


def _recheck(
    plan: Plan,
    cfg: ResolvedConfig,
    gid: int,
    url: str,
    model: str,
    todo: RecheckTodo,
    store: Store,
    events: CampaignEvents,
    held: Held,
) -> ConfigOutcome:
    """The baseline's recheck pass (``campaign.recheck``) on its server, launched again."""
    camp = plan.campaign
    bench = bench_config(camp, url, model, cfg.api or cfg.engine, plan.cpus.client)
    env = {"cpu_split": plan.cpus.to_json()}
    sink = StoreSink(store, bench, camp.campaign.name, cfg.name, config_id=gid,
                     purpose="recheck", environment_extra=env)  # fmt: skip
    watch = [ServerWatch(held.server, cfg.name)] if held.server is not None else []
    clock = [held.clock.sink(url, bench)] if held.clock is not None else []
    status, message = recheck_pass(bench, plan.points, todo, sink, events, [*watch, *clock])
    return ConfigOutcome(cfg.name, status, message, sink.run_ids)
