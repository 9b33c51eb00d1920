"""Lever rules that read the decode profiles: tuned FP8 block-GEMM and fused-MoE configs, NCCL,
under-occupied kernels above 20% of the step, and CUDA graphs for host-bound steps."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.profile.analysis import PARTLY

from .amdahl import (
    category_share,
    ceiling_clause,
    host_clause,
    pct,
    share_clause,
    share_points,
    span_share,
    tpot_floor,
)
from .evidence import ConfigEvidence, Evidence, StoredProfile
from .host import floor_of, kernel_bound
from .model import Lever, LeverOptions, PointBound
from .registry import rule

__all__ = ["BIG_KERNEL", "EAGER_FLAGS", "profile_basis"]

#: a single kernel at or above this fraction of the decode span is a lever of its own
BIG_KERNEL = 0.20
#: below this busy / span the step is (partly) host-bound (``inferlab profile``'s verdicts)
HOST_BOUND = PARTLY
#: categories with a lever rule of their own (a big kernel of theirs is not listed twice)
OWN_RULE = ("fp8_gemm", "moe", "communication")
#: flags that turn CUDA graphs off (vLLM, SGLang)
EAGER_FLAGS = ("--enforce-eager", "--disable-cuda-graph")


def profile_basis(profiles: Sequence[StoredProfile]) -> str:
    """``profile fp8.json.gz at C=1 (16 steps; GPU-bound)`` for each profile used."""
    out = []
    for p in profiles:
        verdict = str(p.data.get("verdict") or "")
        kind = verdict.split(": ", 1)[1].split(";")[0] if ": " in verdict else "no verdict"
        sim = ", SIMULATED" if p.simulated else ""
        where = "an unknown load point" if p.concurrency is None else p.label
        n = len(p.data.get("steps") or [])
        slowed = ""
        if p.data.get("profiled_span_us") and n:
            slowed = (
                f"; its step taken at the measured TPOT, {p.data['span_us'] / n / 1e3:.2f} ms, "
                f"not the profiled {float(p.data['profiled_span_us']) / n / 1e3:.2f} ms"
            )
        out.append(f"profile {p.name} at {where} ({n} steps; {kind}{sim}{slowed})")
    return "; ".join(out)


def _cmd(action: str) -> str:
    """A command in backticks; advice as it is."""
    return f"`{action}`" if action.startswith(("inferlab ", "env ")) else action


def _lines(findings: Sequence[Mapping[str, Any]], cap: int = 6) -> str:
    lines = sorted({int(x) for f in findings for x in (f["evidence"].get("lines") or [])})
    more = "…" if len(lines) > cap else ""
    return ", ".join(str(x) for x in lines[:cap]) + more


@dataclass(frozen=True)
class _Tuning:
    """A kernel-config lever: its profile category, the finding that names untuned shapes,
    recon's kind of tuned files, and the action when the finding has none."""

    kind: str
    title: str
    category: str
    finding: str
    recon_kind: str
    action: str
    diff: tuple[str, ...]  # the config changes the rule explains (registry.rule)


FP8 = _Tuning(
    "fp8-gemm",
    "tune FP8 GEMM",
    "fp8_gemm",
    "untuned-fp8-gemm",
    "fp8_gemm",
    "inferlab tune fp8-gemm --from-log SERVER_LOG",
    (r"^flag --tuned-fp8$", r"^(files|tune) fp8_gemm$"),
)
MOE = _Tuning(
    "moe",
    "tune fused MoE",
    "moe",
    "untuned-moe",
    "fused_moe",
    "tune the fused-MoE kernel for the logged shapes (docs/levers.md)",
    (r"^(files|tune) moe$",),
)


def _recon_lines(ev: Evidence, t: _Tuning, untuned: Sequence[Mapping[str, Any]]) -> list[str]:
    """What recon saw of the engine's tuned files for the devices the log names."""
    devices = sorted({str(f["evidence"]["device"]) for f in untuned if f["evidence"].get("device")})
    out = []
    for r in ev.recon:
        dirs = [d for d in r.get("tuned_dirs") or [] if d.get("kind") == t.recon_kind]
        if not dirs:
            out.append(
                f"recon: the engine's tuned {t.recon_kind} directory was not scanned "
                "(`inferlab recon --python ENGINE_PYTHON`)"
            )
            continue
        where = ", ".join(str(d.get("path")) for d in dirs)
        for dev in devices:
            have = (r.get("tuned_for_devices") or {}).get(dev, {}).get(t.recon_kind) or []
            out.append(f"recon: {len(have)} tuned {t.recon_kind} file(s) for {dev} in {where}")
    return out


def _unbounded(
    t: _Tuning, ev: Evidence, cfg: ConfigEvidence, untuned: list[dict[str, Any]]
) -> Lever:
    """Untuned shapes in the log but no profile: the lever, with nothing to bound it by."""
    shapes = sum(len(f["evidence"].get("shapes") or []) for f in untuned)
    action = str(untuned[0].get("action") or t.action)
    summary = (
        f"{t.title}: {shapes} shape{'s' if shapes != 1 else ''} untuned (log lines "
        f"{_lines(untuned)}); no profile to bound it: capture one (`[profile]`, or "
        f"`inferlab profile --campaign --config {cfg.name} --point C=N`) → {_cmd(action)}"
    )
    evidence = [f"log: {f['message']}" for f in untuned] + _recon_lines(ev, t, untuned)
    conf = "the server log only: how much of the step these shapes take is unknown"
    return Lever(t.kind, t.title, cfg.name or None, "none", [], summary, evidence, action, conf)


def _lever(
    kind: str,
    title: str,
    cfg: ConfigEvidence,
    pts: list[PointBound],
    summary: str,
    evidence: list[str],
    action: str,
    conf: str,
    name: str = "",
) -> Lever:
    """An Amdahl lever of ``cfg`` (its bounds per load point in ``pts``)."""
    return Lever(
        kind, title, cfg.name or None, "amdahl", pts, summary, evidence, action, conf, name
    )


def _config_lever(t: _Tuning, ev: Evidence, cfg: ConfigEvidence) -> list[Lever]:
    """FP8 GEMM / fused MoE: a category's ceiling, offered only when the log names untuned
    shapes (or when no log was mined, saying so); without a profile, the shapes alone."""
    untuned = cfg.found(t.finding)
    if not cfg.profiles and untuned:
        return [_unbounded(t, ev, cfg, untuned)]
    what = t.category
    pts = share_points(cfg.profiles, lambda p: category_share(p, what), kernel=True)
    if not any((p.share or 0) > 0 for p in pts):
        return []
    if not untuned and cfg.log_mined:
        return []  # the log names no untuned shape: nothing to tune
    shapes = sum(len(f["evidence"].get("shapes") or []) for f in untuned)
    head = f"{t.title}: {share_clause(what, pts)} → {ceiling_clause(pts)}"
    if untuned:
        action = str(untuned[0].get("action") or t.action)
        tail = f"; {shapes} shape{'s' if shapes != 1 else ''} untuned (log lines {_lines(untuned)})"
        conf = (
            f"{profile_basis(cfg.profiles)}; a bound on the whole {what} category (the profile "
            "does not split it by shape), so tuning only the named shapes can buy less"
        )
    else:
        action, tail = t.action, "; no server log was mined, so untuned shapes are unknown"
        conf = f"{profile_basis(cfg.profiles)}; no log evidence that any shape is untuned"
    evidence = [share_clause(what, pts) + " (GPU time / decode span)", *tpot_floor(cfg, pts)]
    evidence += host_clause(cfg.profiles) + _grid_lines(cfg.profiles, what)
    evidence += [f"log: {f['message']}" for f in untuned] + _recon_lines(ev, t, untuned)
    summary = f"{head}{tail} → {_cmd(action)}"
    return [_lever(t.kind, t.title, cfg, pts, summary, evidence, action, conf)]


def _register_tuning(t: _Tuning) -> None:
    """The rule of one kernel-config lever: ``_config_lever`` over its category."""

    def build(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> list[Lever]:
        return _config_lever(t, ev, cfg)

    rule(
        t.kind,
        t.title,
        model="amdahl",
        diff=t.diff,
        share=lambda p: category_share(p, t.category),
        kernel=True,
    )(build)


for _tuning in (FP8, MOE):
    _register_tuning(_tuning)


@rule(
    "comm",
    "communication / NCCL",
    model="amdahl",
    diff=(r"^env NCCL_", r"^flag --(disable|enable)-custom-all-reduce$"),
    share=lambda p: category_share(p, "communication"),
    kernel=True,
)
def _comm(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> list[Lever]:
    pts = share_points(cfg.profiles, lambda p: category_share(p, "communication"), kernel=True)
    if not any((p.share or 0) > 0 for p in pts):
        return []
    set_ = {k: v for k, v in cfg.env.items() if k.startswith("NCCL_")}
    if "NCCL_PROTO" in set_:
        action = (
            f"NCCL_PROTO={set_['NCCL_PROTO']} is already set: try the engine's custom "
            "all-reduce, or fewer GPUs per replica"
        )
    else:
        action = "env NCCL_PROTO=LL"  # the low-latency protocol, for decode's small all-reduces
    errors = cfg.found("nccl-error") + cfg.found("nccl-timeout")
    ev_ = [share_clause("communication", pts) + " (GPU time / decode span)", *tpot_floor(cfg, pts)]
    ev_ += host_clause(cfg.profiles) + [f"log: {f['message']}" for f in errors]
    summary = (
        f"communication / NCCL: {share_clause('communication', pts)} → {ceiling_clause(pts)} "
        f"→ {_cmd(action)}"
    )
    conf = f"{profile_basis(cfg.profiles)}; collectives that overlap compute count in full"
    return [_lever("comm", "communication / NCCL", cfg, pts, summary, ev_, action, conf)]


def _big_kernels(
    p: StoredProfile, min_share: float = BIG_KERNEL
) -> list[tuple[Mapping[str, Any], float, float, int]]:
    """(kernel row, share of span, SM fraction, blocks) of kernels ≥ ``min_share`` of the span
    whose launches mostly leave SMs idle (grid smaller than the SM count)."""
    out = []
    occ: dict[str, list[Mapping[str, Any]]] = {}
    for o in p.data.get("occupancy") or []:
        occ.setdefault(o["name"], []).append(o)
    for r in p.data.get("kernel_rows") or []:
        f = span_share(p.data, float(r["time_us"])) or 0.0
        rows = occ.get(r["name"], [])
        low_t = sum(float(o["time_us"]) for o in rows)
        if f < min_share or not rows or low_t < 0.5 * float(r["time_us"]):
            continue
        frac = sum(float(o["sm_fraction"]) * float(o["time_us"]) for o in rows) / low_t
        top = max(rows, key=lambda o: float(o["time_us"]))
        out.append((r, f, frac, int(top["blocks"])))
    return out


def _grid_lines(profiles: Sequence[StoredProfile], category: str) -> list[str]:
    """Occupancy evidence for a category's under-occupied kernels."""
    return [
        f"grid: {r.get('short') or r['name']} runs {blocks} blocks on {p.data.get('sm_count')} "
        f"SMs at {p.label} (at most {frac:.0%} of SMs busy; {pct(f)} of decode)"
        for p in profiles
        for r, f, frac, blocks in _big_kernels(p, 0.01)
        if r.get("category") == category
    ]


@rule(
    "kernel",
    "an under-occupied kernel",
    model="amdahl",
    diff=(
        r"^flag --(attention-backend|decode-attention-backend)$",
        r"^env VLLM_ATTENTION_BACKEND$",
    ),
    share=lambda p: category_share(p, "attention"),
    kernel=True,
)
def _kernels(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> list[Lever]:
    found: dict[str, list[tuple[StoredProfile, Mapping[str, Any], float, float, int]]] = {}
    for p in cfg.profiles:
        for r, f, frac, blocks in _big_kernels(p):
            if r.get("category") not in OWN_RULE:  # those have a lever of their own
                found.setdefault(r["name"], []).append((p, r, f, frac, blocks))
    out = []
    for name, hits in found.items():
        r0 = hits[0][1]
        short, cat = str(r0.get("short") or name), str(r0.get("category") or "other")
        pts = [
            PointBound(
                p.label,
                p.concurrency,
                kernel_bound(p.data, f, math.inf)[1],
                low=kernel_bound(p.data, f, math.inf)[0],
                share=f,
                at_2x=kernel_bound(p.data, f, 2)[1],
                note=f"{blocks} blocks on {p.data.get('sm_count')} SMs: "
                f"×{kernel_bound(p.data, f, 1 / frac)[1]:.3f} if it used every SM",
            )
            for p, _, f, frac, blocks in hits
        ]
        p0, _, _, frac0, blocks0 = hits[0]
        sms = p0.data.get("sm_count")
        occ = f"{blocks0} blocks on {sms} SMs (at most {frac0:.0%} of SMs busy)"
        action = (
            f"give {short} more blocks per launch (split the KV/sequence dimension or more heads "
            "per CTA: the attention backend's split/num-splits option), then profile again"
            if cat == "attention"
            else f"give {short} more blocks per launch (split-K or a tuned config), then profile"
        )
        summary = (
            f"{cat}: {share_clause(short, pts)}, with {occ} → {ceiling_clause(pts)}, "
            f"{pts[0].note.split(': ', 1)[1]} → {action}"
        )
        ev_ = [share_clause(short, pts) + f" ({cat}; GPU time / decode span)", f"grid: {occ}"]
        ev_ += tpot_floor(cfg, pts) + host_clause([h[0] for h in hits])
        conf = (
            f"{profile_basis([h[0] for h in hits])}; the full-SM figure assumes the kernel "
            "scales with the SMs it occupies"
        )
        out.append(_lever("kernel", f"{cat} kernel", cfg, pts, summary, ev_, action, conf, short))
    return out


def _host_bound(p: Mapping[str, Any]) -> bool:
    """The GPU idles more than 15% of the step, or the host's loop takes 85% of it or more
    (a faster kernel would leave the step host-bound)."""
    f = floor_of(p)
    return (_idle(p) or 0.0) > 1 - HOST_BOUND or (
        f is not None and f.high_us >= HOST_BOUND * f.step_us
    )


def _co_bound(host: Sequence[StoredProfile]) -> str:
    """The action where the GPU is busy but the host's loop nearly fills the step."""
    ahead = min((p.data.get("host") or {}).get("ahead", 0.0) for p in host)
    overlap = (
        f"the host already runs ahead of the GPU ({ahead:.0%} of steps began while the GPU ran "
        "the last one)"
        if ahead >= 0.5
        else "overlap it with the GPU (vLLM `--async-scheduling`, SGLang's overlap scheduler)"
    )
    return (
        "the host's loop nearly fills the step, so a faster kernel leaves it host-bound: cut "
        f"the CPU work per step (sampling, scheduling, input preparation); {overlap}; or raise "
        "the batch"
    )


def _idle(p: Mapping[str, Any]) -> float | None:
    m = p.get("mean_step") or {}
    span = float(m.get("span_us") or 0.0)
    return float(m.get("idle_us") or 0.0) / span if span > 0 else None


@rule(
    "cuda-graphs",
    "CUDA graphs / host overhead",
    model="amdahl",
    diff=(r"^flag --(enforce-eager|disable-cuda-graph)$",),
    share=_idle,
)
def _graphs(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> list[Lever]:
    host = [p for p in cfg.profiles if _host_bound(p.data)]
    pts = share_points(host, _idle)
    if not pts:
        return []
    graphs = any(int(p.data.get("graph_launches") or 0) > 0 for p in host)
    eager = [f for f in EAGER_FLAGS if f in cfg.argv]
    if graphs and all((_idle(p.data) or 0.0) <= 1 - HOST_BOUND for p in host):
        action = _co_bound(host)
    elif graphs:
        action = (
            "host-bound even with CUDA graphs: cut the CPU work between replays (sampling and "
            "scheduling overlap), or raise the batch"
        )
    elif eager:
        action = f"run decode in CUDA graphs: remove {' and '.join(eager)}"
    else:
        action = "run decode in CUDA graphs (the engine's graph capture, batch sizes up to C)"
    summary = (
        f"CUDA graphs / host overhead: {share_clause('the GPU', pts, verb='idles')} "
        f"→ {ceiling_clause(pts)} → {action}"
    )
    ev_ = [str(p.data.get("verdict") or "") for p in host] + tpot_floor(cfg, pts)
    ev_ += host_clause(host)
    conf = f"{profile_basis(host)}; idle time of the step's GPU span, all of it removable at best"
    title = "CUDA graphs / host overhead"
    return [_lever("cuda-graphs", title, cfg, pts, summary, ev_, action, conf)]
