"""``inferlab run CAMPAIGN.toml``: every config launched, verified, measured, stored, stopped.

Order, per config: launch → verify → (warmup) → every load point × trial → scrape → stop →
drain. Every finished load point is committed at once. A config that fails to launch or verify
is stored with its classified failure, log tail and remedy, and the campaign goes on. ``resume``
skips finished cells of configs whose content hash is unchanged (a changed config is a new
config: its old results are never mixed in). Only one server of a campaign runs at a time.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.campaign import capture, profiled
from inferlab.campaign.aftermath import RuntimeFailure, stop_and_check
from inferlab.campaign.bench import StoreSink
from inferlab.campaign.predictions import predict_now
from inferlab.campaign.recon import store_recon
from inferlab.campaign.up import campaign_lock, launch_config, served_model, verify_config
from inferlab.campaign.watch import ServerWatch
from inferlab.config.bench import BenchConfig
from inferlab.config.campaign import CampaignFile, load_campaign
from inferlab.config.resolve import ResolvedConfig, resolve_configs
from inferlab.engines import get_engine
from inferlab.errors import ConfigError, ConnectError, InferlabError, LaunchError, ServerRejected
from inferlab.load.bench import BenchEvents, LoadPoint, plan_points, run_bench
from inferlab.logs import store_log_findings
from inferlab.server import ServerProcess
from inferlab.server.gpumem import used_mib
from inferlab.store import Store

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
class Plan:
    path: Path
    campaign: CampaignFile
    configs: list[ResolvedConfig]
    points: list[LoadPoint]
    trials: int
    bench: BenchConfig  # the load section as a sweep (url filled in per config)

    @property
    def cells(self) -> int:
        return len(self.configs) * len(self.points) * self.trials


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


def bench_config(camp: CampaignFile, url: str, model: str, engine: str) -> BenchConfig:
    """The campaign's load section as one sweep against ``url``."""
    ld = camp.load
    return BenchConfig(
        url=url,
        model=model,
        endpoint=ld.endpoint,
        engine=engine,
        concurrency=ld.concurrency,
        rate=ld.rate,
        arrival=ld.arrival,
        burstiness=ld.burstiness,
        max_concurrency=ld.max_concurrency,
        workload=ld.workload,
        requests=ld.requests,
        duration_s=ld.duration_s,
        warmup=ld.warmup,
        trials=ld.trials,
        tokenizer=ld.tokenizer,
        timeout_s=ld.timeout_s,
        slo=camp.slo,
    )


def make_plan(path: str | Path) -> Plan:
    """Load, validate and resolve the campaign; nothing is started."""
    p = Path(path)
    camp = load_campaign(p)
    configs = resolve_configs(camp, p, text := p.read_text(encoding="utf-8"))
    if not camp.load.concurrency and not camp.load.rate:
        raise ConfigError(f"{p}: load: give concurrency and/or rate")
    if camp.load.requests is None and camp.load.duration_s is None:
        raise ConfigError(f"{p}: load: give requests or duration_s")
    bench = bench_config(camp, "http://127.0.0.1:1", camp.engine.model or "model", camp.engine.kind)
    points = plan_points(bench)
    capture.check_profile(p, text, camp, [c.name for c in configs], [pt.label for pt in points])
    return Plan(p, camp, configs, points, camp.load.trials, bench)


def render_plan(plan: Plan) -> list[str]:
    """The plan as lines: every config's resolved argv and env, its diff against the first
    (baseline) config, and the load points × trials."""
    spec = get_engine(plan.campaign.engine.kind)
    base = plan.configs[0]
    lines = [
        f"campaign {plan.campaign.campaign.name}: {len(plan.configs)} configs × "
        f"{len(plan.points)} load points × {plan.trials} trial(s) = {plan.cells} cells"
    ]
    lines.append("load points: " + ", ".join(p.label for p in plan.points))
    for i, c in enumerate(plan.configs):
        lines.append(
            f"[{i + 1}] {c.name}"
            + (f" (extends {' → '.join(c.chain[:-1])})" if len(c.chain) > 1 else "")
        )
        if spec.launchers:
            argv = spec.launch_argv(
                c.model,
                host="127.0.0.1",
                port=0,
                python=c.python or sys.executable,
                args=c.args,
                launcher=c.launcher,
            )
            lines.append("    argv: " + shlex.join(argv).replace(" --port 0", " --port <free>"))
        else:
            lines.append(f"    endpoint: {c.url} (already running)")
        if c.env:
            lines.append("    env: " + " ".join(f"{k}={v}" for k, v in sorted(c.env.items())))
        if not c.lossless:
            lines.append("    lossless = false: greedy equivalence is recorded, not gating")
        lines += capture.profiling_lines(plan.campaign, c)
        if c is not base:
            changes = spec.diff(base.args, c.args)
            envd = {k: v for k, v in c.env.items() if base.env.get(k) != v}
            diff = [str(ch) for ch in changes] + [f"env {k}={v}" for k, v in envd.items()]
            diff += ["profiling on"] if capture.is_profiled(plan.campaign, c) else []
            lines.append("    vs " + base.name + ": " + ("; ".join(diff) or "no difference"))
    return lines


def select_configs(plan: Plan, names: Sequence[str]) -> Plan:
    """``plan`` with only the configs named (file order kept); none named: all of them."""
    if not names:
        return plan
    known = [c.name for c in plan.configs]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(
            f"{plan.path}: --config {unknown[0]!r}: no such config (configs: {', '.join(known)})"
        )
    plan.configs = [c for c in plan.configs if c.name in names]
    return plan


def done_cells(store: Store, campaign: str, config_id: int) -> set[tuple[str, int]]:
    """(label, trial) cells of a config already measured (what ``--resume`` skips)."""
    rows = store.db.execute(
        "SELECT r.label, r.trial FROM runs r JOIN campaigns c ON c.id = r.campaign_id "
        "WHERE c.name = ? AND r.config_id = ? AND r.interrupted = 0 AND r.rejected IS NULL "
        "AND r.purpose = 'measure'",
        (campaign, config_id),
    ).fetchall()
    return {(str(a), int(b)) for a, b in rows}


def _record(store: Store, config_id: int, kind: str, passed: bool, detail: dict[str, Any]) -> None:
    with store.transaction():
        store.add_verification(config_id, kind, passed, detail)


def run_campaign(
    path: str | Path,
    *,
    store: Store,
    events: CampaignEvents | None = None,
    resume: bool = False,
    no_verify: bool = False,
    only: Sequence[str] = (),
) -> CampaignResult:
    """Run every config of the campaign (or those named in ``only``, in file order); see the
    module docstring for the order and rules."""
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
    result = CampaignResult(name, [])
    all_cells = {(p.label, t) for p in plan.points for t in range(plan.trials)}
    with campaign_lock(camp):
        if not (resume and store.analyses("recon", campaign=name)):
            store_recon(store, name, plan.configs, events.message)
        for i, cfg in enumerate(plan.configs):
            with store.transaction():
                cid = store.campaign_id(name)
                gid = store.config_id(
                    cid, cfg.name, engine=cfg.engine, model=cfg.model, argv=cfg.args, env=cfg.env
                )
            todo = all_cells - done_cells(store, name, gid) if resume else set(all_cells)
            if not todo and not profiled.profiles_missing(camp, cfg, store, gid):
                out = ConfigOutcome(cfg.name, "skipped", "every cell already measured")
                result.outcomes.append(out)
                events.config_done(out)
                continue
            events.config_started(cfg, i, len(plan.configs))
            out = _run_config(plan, cfg, gid, todo, store, events, no_verify)
            result.outcomes.append(out)
            events.config_done(out)
            if out.status == "measured" and not predict_now(store, name, events):
                result.interrupted = True
                break
            if out.status == "interrupted":
                result.interrupted = True
                break
    return result


@dataclass
class _Held:
    """The server of the config being run, and NVML's used MiB per GPU around it."""

    server: ServerProcess | None = None
    gpu_before: list[int] | None = None
    gpu_ready: list[int] | None = None


def _run_config(
    plan: Plan,
    cfg: ResolvedConfig,
    gid: int,
    todo: set[tuple[str, int]],
    store: Store,
    events: CampaignEvents,
    no_verify: bool,
) -> ConfigOutcome:
    held = _Held(gpu_before=used_mib() if get_engine(cfg.engine).launchers else None)
    failure: RuntimeFailure | None = None
    try:
        out = _launch_and_measure(plan, cfg, gid, todo, store, events, no_verify, held)
    except KeyboardInterrupt:
        out = ConfigOutcome(
            cfg.name,
            "interrupted",
            "Ctrl-C: the server was stopped; inferlab run --resume continues",
        )
    except InferlabError as exc:
        out = ConfigOutcome(cfg.name, "failed", str(exc))
    finally:
        if held.server is not None:
            events.message(f"{cfg.name}: stopping ...")
            failure, line = stop_and_check(
                held.server,
                get_engine(cfg.engine),
                gid,
                store,
                plan.campaign.campaign.name,
                gpu_before=held.gpu_before,
                gpu_ready=held.gpu_ready,
            )
            events.message(f"{cfg.name}: {line}")
    if failure is not None:  # the server came up, then died of something known
        seen = out.message[:300] + ("…" if len(out.message) > 300 else "")
        out.message = failure.message + (f" — {seen}" if seen else "")
        out.remedy = failure.remedy
        out.log_tail = failure.tail
        if out.status == "measured":
            out.status = "failed"
    return out


def _launch(
    plan: Plan, cfg: ResolvedConfig, gid: int, store: Store, events: CampaignEvents, held: _Held
) -> ConfigOutcome | str:
    """Launch ``cfg`` (or take its URL); the server's base URL, or the failed outcome."""
    spec = get_engine(cfg.engine)
    if not spec.launchers:
        if not cfg.url:
            raise ConfigError(f"{plan.path}: engine.url: kind {cfg.engine!r} needs the URL")
        return cfg.url.rstrip("/")
    events.message(f"{cfg.name}: launching ...")
    launched, note = capture.launch_form(plan.campaign, cfg, store)
    try:
        held.server = server = launch_config(plan.campaign, launched)
    except LaunchError as exc:
        if exc.log_path:
            store_log_findings(
                store, str(exc.log_path), campaign=plan.campaign.campaign.name, config_id=gid
            )
        detail: dict[str, Any] = {
            "kind": exc.kind,
            "message": str(exc),
            "remedy": exc.remedy,
            "tail": exc.tail[-40:],
            "log_path": str(exc.log_path or ""),
        }
        _record(store, gid, "launch", False, detail)
        return ConfigOutcome(
            cfg.name, "launch-failed", str(exc), remedy=exc.remedy, log_tail=exc.tail[-12:]
        )
    held.gpu_ready = used_mib()
    ready: dict[str, Any] = {
        "ready_s": server.ready_s,
        "log_path": str(server.spec.log_path),
        "argv": server.spec.argv,
        "gpu_used_mib": held.gpu_ready,
    } | ({"profiling": note} if note else {})
    _record(store, gid, "launch", True, ready)
    return server.spec.health_url.rsplit(spec.health_path, 1)[0]


def _launch_and_measure(
    plan: Plan,
    cfg: ResolvedConfig,
    gid: int,
    todo: set[tuple[str, int]],
    store: Store,
    events: CampaignEvents,
    no_verify: bool,
    held: _Held,
) -> ConfigOutcome:
    camp = plan.campaign
    url = _launch(plan, cfg, gid, store, events, held)
    if isinstance(url, ConfigOutcome):
        return url
    model = served_model(url, cfg.model or "")
    if camp.verify.enabled and not no_verify:
        events.message(f"{cfg.name}: verifying ...")
        rep = verify_config(camp, cfg, url, model, store)
        if not rep.passed:
            fails = "; ".join(f"{c.kind}: {c.message}" for c in rep.failures())
            what = "diverged from the reference" if rep.diverged else "failed verification"
            return ConfigOutcome(
                cfg.name,
                "verify-failed",
                f"{what}: {fails}",
                remedy="fix the config, or --no-verify to measure anyway",
            )
    bench = bench_config(camp, url, model, cfg.engine)
    sink = StoreSink(store, bench, camp.campaign.name, cfg.name, config_id=gid)
    watch = [ServerWatch(held.server, cfg.name)] if held.server is not None else []
    try:
        res = run_bench(bench, events, None, [*watch, sink], cells=todo) if todo else None
    except (ServerRejected, ConnectError) as exc:
        return ConfigOutcome(cfg.name, "failed", str(exc), sink.run_ids)
    if watch and watch[0].exited:  # the server exited mid-run: the rest is not measured
        return ConfigOutcome(cfg.name, "failed", watch[0].exited, sink.run_ids)
    if res is not None and res.interrupted:
        return ConfigOutcome(cfg.name, "interrupted", "", sink.run_ids)
    notes = profiled.profile_config(camp, cfg, gid, bench, plan.points, store, events, held.server)
    return ConfigOutcome(cfg.name, "measured", "; ".join(notes), sink.run_ids)
