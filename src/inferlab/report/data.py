"""What a campaign report shows, gathered from the store only (nothing is re-measured).

``build_report`` reads runs, raw requests, configs, verifications and environments and returns
a ``Report``: plain data that the Markdown and HTML renderers format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inferlab.config.pattern import closed_concurrency
from inferlab.engines import get_engine, is_simulated
from inferlab.errors import ConfigError, InferlabError
from inferlab.picks import pick
from inferlab.report.agreement import AgreementRow, agreement_rows
from inferlab.report.compare import build_comparison
from inferlab.report.compare_runs import config_keys
from inferlab.report.comparison import Comparison
from inferlab.report.sections import Section, build_sections
from inferlab.stats.metrics import itl_ms
from inferlab.stats.summary import percentile
from inferlab.store import RunRow, Store
from inferlab.store.bodies import Body
from inferlab.store.checks import (
    CheckRecord,
    EvalSamples,
    GreedyOutputsRecord,
    LaunchRecord,
    LogprobReferenceRecord,
    RuntimeRecord,
    StopRecord,
)
from inferlab.store.configs import StoredConfig

__all__ = [
    "Curve",
    "LaunchFailure",
    "Quantiles",
    "Report",
    "RunInfo",
    "VerificationRow",
    "build_report",
]

#: scraped server values shown per run (key in ``summary["server"]`` → title)
SERVER_KEYS: dict[str, str] = {
    "spec_accept_length": "spec accept length (tokens/step)",
    "spec_acceptance_rate": "spec acceptance rate",
    "prefix_cache_hit_rate": "prefix-cache hit rate (tokens)",
    "prefix_cache_hit_rate_gauge": "prefix-cache hit rate (mean of per-batch gauge)",
    "prefix_cache_queries": "prefix-cache lookups (tokens)",
    "max_kv_cache_usage": "max KV-cache usage",
    "mean_kv_cache_usage": "mean KV-cache usage",
    "max_running": "max running",
    "max_waiting": "max waiting",
    "mean_waiting": "mean waiting (over scrapes with requests in)",
    "generation_tokens": "generation tokens",
}

#: environment fields shown, in order
ENV_KEYS = (
    "engine_name",
    "engine_version",
    "gpu_name",
    "gpu_count",
    "gpu_memory_mib",
    "driver",
    "host",
    "cpu",
    "inferlab_version",
)


@dataclass(frozen=True)
class VerificationRow:
    config: str
    kind: str
    passed: bool
    message: str
    created_at: str


@dataclass(frozen=True)
class LaunchFailure:
    """A config that failed to start, or whose server died while serving: its classification,
    remedy and the lines of its log around the failure."""

    config: str
    kind: str
    message: str
    remedy: str
    tail: list[str]
    log_path: str
    created_at: str


@dataclass(frozen=True)
class RunInfo:
    id: int
    config: str
    label: str
    concurrency: int | None
    trial: int
    output_tok_s: float | None
    server: dict[str, Any]
    warnings: list[dict[str, str]]
    interrupted: bool
    trust: str = "trusted"
    stop: dict[str, Any] | None = None  # adaptive points: why and how precisely they stopped


@dataclass(frozen=True)
class Quantiles:
    """p5/p25/p50/p75/p95/p99 of pooled per-request (TTFT) or per-token (ITL) samples, ms."""

    n: int
    p5: float
    p25: float
    p50: float
    p75: float
    p95: float
    p99: float


@dataclass(frozen=True)
class Curve:
    """One config across concurrency: (C, mean output tok/s over trials, median TPOT ms)."""

    config: str
    points: list[tuple[int, float, float]]


@dataclass
class Report:
    campaign: str
    simulated: bool
    baseline: str | None
    configs: list[StoredConfig]
    comparison: Comparison | None
    no_comparison: str | None  # why there is no verdict table
    curves: list[Curve]
    ttft: dict[tuple[str, str], Quantiles]
    itl: dict[tuple[str, str], Quantiles]
    runs: list[RunInfo]
    verifications: list[VerificationRow]
    launch_failures: list[LaunchFailure]
    environments: dict[str, list[dict[str, Any]]]  # config → distinct environments
    argv_diff: dict[str, list[str]]  # config → changes vs the baseline
    env_diff: dict[str, list[str]]
    notes: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)  # findings, recon, profiles, tuning
    agreement: list[AgreementRow] = field(default_factory=list)  # docs/verify.md, per config


def campaigns(store: Store) -> list[str]:
    return store.configs.names()


def _configs(store: Store, campaign: str) -> list[StoredConfig]:
    return store.configs(campaign)


def _verifications(
    store: Store, campaign: str
) -> tuple[list[VerificationRow], list[LaunchFailure]]:
    checks: list[VerificationRow] = []
    launches: list[LaunchFailure] = []
    for v in store.verifications(campaign):
        name, kind, d, created = v.config, v.kind, v.detail, v.created_at
        if isinstance(d, LaunchRecord) and v.passed:  # came up: a passed check, not a failure
            msg = f"ready in {d.ready_s:.1f} s" if d.ready_s is not None else "ready"
            checks.append(VerificationRow(name, kind, True, msg, created))
            continue
        if isinstance(d, LaunchRecord | RuntimeRecord):  # runtime: came up, then died
            what = d.kind or "unknown"
            launches.append(
                LaunchFailure(
                    config=name,
                    kind=what if kind == "launch" else f"{what} (while serving)",
                    message=d.message or "",
                    remedy=d.remedy or "",
                    tail=list(d.tail or []),
                    log_path=d.log_path or "",
                    created_at=created,
                )
            )
            continue
        checks.append(VerificationRow(name, kind, v.passed, _stored_line(d), created))
    return checks, launches


def _stored_line(d: Body) -> str:
    """The line of a stored verification: a check's message, or what a stored record holds."""
    if isinstance(d, GreedyOutputsRecord):
        return f"reference greedy outputs stored ({len(d.prompts)} prompts)"
    if isinstance(d, LogprobReferenceRecord):
        return (
            f"reference logprobs stored ({len(d.prompts)} prompts, top-{d.top_k}, {d.tokens} "
            "tokens each): the agreement gate's baseline"
        )
    if isinstance(d, EvalSamples):
        n = sum(len({s.get("doc_id") for s in v}) for v in d.samples.values())
        return f"lm-eval {d.version} samples stored ({n} documents of {', '.join(d.samples)})"
    return d.message if isinstance(d, CheckRecord | StopRecord) else ""


def _quantiles(xs: list[float]) -> Quantiles | None:
    if not xs:
        return None
    p = [percentile(xs, q) for q in (5, 25, 50, 75, 95, 99)]
    return Quantiles(len(xs), *p)


def _change_lines(base: StoredConfig, cfg: StoredConfig) -> tuple[list[str], list[str]]:
    argv: list[str] = []
    if base.engine != cfg.engine:
        argv.append(f"engine: {base.engine} → {cfg.engine}")
    if base.model != cfg.model:
        argv.append(f"model: {base.model} → {cfg.model}")
    try:
        argv += [str(c) for c in get_engine(cfg.engine or "openai").diff(base.argv, cfg.argv)]
    except InferlabError:
        if base.argv != cfg.argv:
            argv.append(f"argv: {' '.join(base.argv)} → {' '.join(cfg.argv)}")
    env: list[str] = []
    for k in sorted(set(base.env) | set(cfg.env)):
        a, b = base.env.get(k), cfg.env.get(k)
        if a == b:
            continue
        if a is None:
            env.append(f"+ {k}={b}")
        elif b is None:
            env.append(f"- {k}")
        else:
            env.append(f"{k}: {a} → {b}")
    return argv, env


def _run_info(store: Store, r: RunRow) -> RunInfo:
    """One run as the report lists it: its warnings, and its trust issues as warnings."""
    meta = store.runs.meta(r.id)
    server = r.summary.get("server")
    warnings = [
        {k: str(v) for k, v in w.items()} if isinstance(w, dict) else {"message": str(w)}
        for w in meta.get("warnings") or []
    ]
    warnings += [{**x, "kind": f"untrusted: {x.get('reason')}"} for x in r.trust_reasons]
    return RunInfo(
        **pick(r, "id", "config", "label", "concurrency", "trial", "interrupted", "trust", "stop"),
        output_tok_s=r.summary.get("output_tok_s"),
        server=dict(server) if isinstance(server, dict) else {},
        warnings=warnings,
    )


def _comparison(
    store: Store, campaign: str, finished: list[RunRow], baseline: str | None
) -> tuple[Comparison | None, str | None]:
    """The verdict table (forced: differences are listed, not refused), or why there is none."""
    if not finished:
        return None, "no finished runs in this campaign"
    run_configs = list(dict.fromkeys(r.config for r in finished))
    if baseline is not None and baseline not in run_configs:
        return None, f"the baseline {baseline!r} has no finished runs"
    return build_comparison(store, campaign=campaign, baseline=baseline, force=True), None


def _distributions(
    store: Store, runs: list[RunRow]
) -> tuple[dict[tuple[str, str], Quantiles], dict[tuple[str, str], Quantiles]]:
    """TTFT and ITL quantiles (ms) per (config key, load label), pooled over finished trials."""
    keys = config_keys([r for r in runs if not r.interrupted])
    ttft_s: dict[tuple[str, str], list[float]] = {}
    itl_s: dict[tuple[str, str], list[float]] = {}
    for r in runs:
        if r.interrupted:
            continue
        key = (keys[r.id], r.label)
        for rec in store.requests(r.id):
            if not rec.counted or not rec.ok or not rec.event_ns:
                continue
            if rec.ttft_ns is not None:
                ttft_s.setdefault(key, []).append(rec.ttft_ns / 1e6)
            itl_s.setdefault(key, []).extend(itl_ms(rec))
    ttft = {k: q for k, v in ttft_s.items() if (q := _quantiles(v)) is not None}
    itl = {k: q for k, v in itl_s.items() if (q := _quantiles(v)) is not None}
    return ttft, itl


def _curves(comparison: Comparison | None) -> list[Curve]:
    """Each config's (C, output tok/s, median TPOT) over its C=N load points."""
    curves: list[Curve] = []
    if comparison is None:
        return curves
    for cfg in comparison.configs:
        pts = []
        for lb in comparison.labels:
            c = closed_concurrency(lb)
            cell = comparison.cells.get((cfg, lb))
            if c is not None and cell is not None:
                v = cell.values
                pts.append((c, v["output_tok_s"], v.get("tpot_ms", float("nan"))))
        if pts:
            curves.append(Curve(cfg, pts))
    return curves


def _environments(runs: list[RunRow]) -> dict[str, list[dict[str, Any]]]:
    """Config → its distinct environments (the ``ENV_KEYS`` fields that are set)."""
    envs: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        e = {k: r.environment.get(k) for k in ENV_KEYS if r.environment.get(k) is not None}
        lst = envs.setdefault(r.config, [])
        if e and e not in lst:
            lst.append(e)
    return envs


def _diffs(
    configs: list[StoredConfig], base_name: str | None
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Config → its argv changes and its env changes against the baseline's newest content."""
    argv_diff: dict[str, list[str]] = {}
    env_diff: dict[str, list[str]] = {}
    latest = {c.name: c for c in configs}  # the newest content of each name
    base_cfg = latest.get(base_name or "")
    if base_cfg is not None:
        for c in latest.values():
            if c.name != base_cfg.name:
                argv_diff[c.name], env_diff[c.name] = _change_lines(base_cfg, c)
    return argv_diff, env_diff


def build_report(store: Store, campaign: str, *, baseline: str | None = None) -> Report:
    """Everything the report shows for ``campaign``. Raises ``ConfigError`` for an unknown
    campaign (listing the known ones) or an unknown baseline."""
    known = campaigns(store)
    if campaign not in known:
        raise ConfigError(
            f"report: no campaign {campaign!r} in {store.path}"
            + (f" (campaigns: {', '.join(known)})" if known else " (the store has no campaigns)")
        )
    configs = _configs(store, campaign)
    runs = store.runs(campaign=campaign)
    names = list(dict.fromkeys(c.name for c in configs))
    if baseline is not None and baseline not in names:
        raise ConfigError(
            f"--baseline: {baseline!r} is not a config of campaign {campaign!r} "
            f"({', '.join(names) or 'none'})"
        )
    finished = [r for r in runs if not r.interrupted]
    comparison, no_comparison = _comparison(store, campaign, finished, baseline)
    base_name = (
        comparison.baseline if comparison is not None else (baseline or next(iter(names), None))
    )
    run_infos = [_run_info(store, r) for r in runs]
    ttft, itl = _distributions(store, runs)
    argv_diff, env_diff = _diffs(configs, base_name)
    checks, launches = _verifications(store, campaign)
    curves, envs = _curves(comparison), _environments(runs)
    simulated = any(is_simulated(c.engine) for c in configs) or any(
        is_simulated(r.environment.get("engine_name")) for r in runs
    )
    return Report(
        campaign=campaign,
        simulated=simulated,
        baseline=base_name,
        configs=configs,
        comparison=comparison,
        no_comparison=no_comparison,
        curves=curves,
        ttft=ttft,
        itl=itl,
        runs=run_infos,
        verifications=checks,
        launch_failures=launches,
        environments=envs,
        argv_diff=argv_diff,
        env_diff=env_diff,
        sections=build_sections(store, campaign),
        agreement=agreement_rows(store, campaign),
    )
