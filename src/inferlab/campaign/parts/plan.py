"""A campaign's plan: the file loaded, validated and resolved (nothing started), and shown
as lines — every config's argv and env, its diff against the baseline, the load points."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from inferlab.campaign.context import CpuSplit
from inferlab.campaign.parts import capture
from inferlab.campaign.parts.bench import bench_config
from inferlab.campaign.parts.cpus import plan_cpus
from inferlab.campaign.parts.evalstep import plan_line
from inferlab.campaign.parts.files import check_files
from inferlab.campaign.parts.resolve import resolve_configs
from inferlab.campaign.parts.stopping import stopping_lines
from inferlab.config.bench import BenchConfig
from inferlab.config.campaign import CampaignFile, load_campaign
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import EngineSpec, get_engine
from inferlab.errors import ConfigError
from inferlab.load.bench import LoadPoint, plan_points
from inferlab.load.replay import read_traces
from inferlab.secrets import REDACTED, scrub_argv, scrub_env

__all__ = [
    "Plan",
    "baseline_of",
    "make_plan",
    "plan_of",
    "reference_name",
    "render_plan",
    "select_configs",
]

_C = TypeVar("_C")


def baseline_of(configs: Sequence[_C]) -> _C:
    """The baseline of a campaign's configs in file order (its ``[[config]]`` sections or
    their resolved forms): the first. Every diff, lever check and A/B is against it; this is
    the one place that says so (``tests/unit/test_facts_have_one_home.py``)."""
    if not configs:
        raise ConfigError("the campaign has no config (give at least one [[config]])")
    return configs[0]


@dataclass
class Plan:
    path: Path
    campaign: CampaignFile
    configs: list[ResolvedConfig]
    points: list[LoadPoint]
    trials: int
    bench: BenchConfig  # the load section as a sweep (url filled in per config)
    cpus: CpuSplit  # which CPUs the server and the measuring client get
    #: the campaign's first config: every config's diff (and lever evidence) is against it,
    #: also when only some configs run (``select_configs``)
    baseline: ResolvedConfig

    @property
    def cells(self) -> int:
        return len(self.configs) * len(self.points) * self.trials

    @property
    def reference(self) -> str:
        """The config the others are tested against: greedy equivalence and the sequential
        A/B (``[verify] equivalent_to``, else the baseline)."""
        return reference_name(self.campaign, self.baseline)


def reference_name(camp: CampaignFile, baseline: ResolvedConfig) -> str:
    """``Plan.reference`` for a campaign and its baseline (``up`` has no plan)."""
    return camp.verify.equivalent_to or baseline.name


def make_plan(path: str | Path) -> Plan:
    """Load, validate and resolve the campaign; nothing is started. Every ``files`` directory
    is read and checked (names, JSON) and every saved tune run must exist."""
    p = Path(path)
    camp = load_campaign(p)
    return plan_of(camp, p, p.read_text(encoding="utf-8"))


def plan_of(camp: CampaignFile, p: Path, text: str) -> Plan:
    """``make_plan`` of a campaign already loaded (or derived from one: ``optimize`` adds its
    trials); ``p`` and ``text`` locate errors."""
    configs = resolve_configs(camp, p, text)
    for c in configs:
        check_files(c, str(p))
        for kind, how in c.tune.items():
            if how != "from-log" and not Path(how).is_file():
                raise ConfigError(
                    f"{p}: config {c.name!r}: tune.{kind}: {how} does not exist (expected "
                    "'from-log' or a saved tune-run-*.json)"
                )
    ld = camp.load
    if not ld.patterns():
        raise ConfigError(f"{p}: load: give concurrency, rate, trace, sessions and/or points")
    if any(x.counted for x in ld.patterns()) and ld.requests is None and ld.duration_s is None:
        raise ConfigError(f"{p}: load: give requests or duration_s")
    bench = bench_config(camp, "http://127.0.0.1:1", camp.engine.model or "model", camp.engine.kind)
    read_traces(bench)  # every line of the trace checked before any server starts
    points = plan_points(bench)
    capture.check_profile(p, text, camp, [c.name for c in configs], [pt.label for pt in points])
    cpus = plan_cpus(camp, max(pt.streams for pt in points), path=p, text=text)
    return Plan(p, camp, configs, points, camp.load.trials, bench, cpus, baseline_of(configs))


def render_plan(plan: Plan) -> list[str]:
    """The plan as lines: every config's resolved argv and env, its diff against the first
    (baseline) config, and the load points × trials."""
    spec = get_engine(plan.campaign.engine.kind)
    base = plan.baseline
    lines = [
        f"campaign {plan.campaign.campaign.name}: {len(plan.configs)} configs × "
        f"{len(plan.points)} load points × {plan.trials} trial(s) = {plan.cells} cells"
    ]
    lines.append("load points: " + ", ".join(p.label for p in plan.points))
    lines += stopping_lines(plan.campaign, plan.baseline.name, plan.reference)
    lines += plan.cpus.lines()
    verify = plan.campaign.verify
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
                template=c.command,
            )
            shown = " ".join(
                a if a == REDACTED else shlex.quote(a) for a in scrub_argv(argv)
            ).replace(" --port 0", " --port <free>")
            lines.append("    argv: " + shown)
        else:
            lines.append(f"    endpoint: {c.url} (already running)")
        env = scrub_env(c.env)
        if env:
            lines.append("    env: " + " ".join(f"{k}={v}" for k, v in sorted(env.items())))
        for kind, d in sorted(c.files.items()):
            lines.append(f"    files {kind}: {d} (installed for this config only)")
        for kind, how in sorted(c.tune.items()):
            lines.append(f"    tune {kind}: {how} (made before it launches)")
        if not c.lossless:
            lines.append("    lossless = false: greedy equivalence is recorded, not gating")
            gate = c.lossy or plan.campaign.verify.lossy
            if gate is not None:
                lines.append(
                    f"    lossy gate: KL ≤ {gate.max_kl:g} nats/token, top-1 ≥ "
                    f"{gate.min_top1:.2%} (interval ends, docs/verify.md)"
                )
        if verify.eval is not None and verify.enabled:
            ref = verify.equivalent_to or base.name
            lines.append("    " + plan_line(verify.eval, reference=c.name == ref))
        lines += capture.profiling_lines(plan.campaign, c)
        if c is not base:
            diff = _diff(spec, base, c, env)
            diff += ["profiling on"] if capture.is_profiled(plan.campaign, c) else []
            lines.append("    vs " + base.name + ": " + ("; ".join(diff) or "no difference"))
    return lines


def _diff(
    spec: EngineSpec, base: ResolvedConfig, c: ResolvedConfig, env: dict[str, str]
) -> list[str]:
    changes = [f"model {c.model}"] if c.model != base.model else []
    changes += [str(ch) for ch in spec.diff(scrub_argv(base.args), scrub_argv(c.args))]
    changes += [f"env {k}={env[k]}" for k in env if base.env.get(k) != c.env.get(k)]
    changes += [f"- env {k}" for k in base.env if k not in c.env]
    kinds = sorted({*c.files, *c.tune, *base.files, *base.tune})
    changes += [
        f"files {k}"
        for k in kinds
        if (c.files.get(k), c.tune.get(k)) != (base.files.get(k), base.tune.get(k))
    ]
    return changes


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
