"""Lever rules that read the concurrency sweep and the server's counters: speculative decoding
(a band per load point, from the baseline alone), concurrency itself (the saturation knee) and
memory / running-request caps (KV pressure, queueing)."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from inferlab.engines import get_engine
from inferlab.engines.flags import parse
from inferlab.errors import InferlabError
from inferlab.stats.saturation import Saturation, find_saturation

from .evidence import ConfigEvidence, Evidence
from .model import Lever, LeverOptions, PointBound, label_of
from .registry import rule
from .specdec import (
    DEFAULT_DRAFT_COST,
    METHOD_DRAFT_COST,
    SpecFlags,
    SpecPoint,
    first_without_help,
    spec_band,
    spec_flags,
)

#: at most this fraction of C running (and the rest waiting) is a running-request cap
CAPPED = 0.75

__all__ = ["SpecInputs", "flags_of", "saturation_of", "spec_inputs", "spec_of"]


def flags_of(cfg: ConfigEvidence) -> dict[str, tuple[str, ...]]:
    """A config's argv as canonical flags, in its engine's spelling when the engine is known."""
    try:
        return dict(get_engine(cfg.engine or "openai").parse_args(cfg.argv).flags)
    except InferlabError:
        return dict(parse(cfg.argv).flags)


def spec_of(cfg: ConfigEvidence) -> SpecFlags | None:
    return spec_flags(flags_of(cfg))


def saturation_of(cfg: ConfigEvidence) -> Saturation | None:
    pts = [(c, p.output_tok_s, p.tpot_ms) for c, p in sorted(cfg.sweep.items())]
    return find_saturation(pts) if len(pts) >= 2 else None


@dataclass(frozen=True)
class SpecInputs:
    """k, τ and δ of a speculative-decoding candidate, each with where it came from."""

    method: str
    k: int
    tau: float
    delta: float
    source_config: str | None
    tau_from: str
    k_from: str
    delta_from: str
    flags: str  # the candidate's speculative flags, as an action


def _layers(cfgs: list[ConfigEvidence]) -> tuple[int, str] | None:
    """Target layers, as the launches per step of the most-launched attention kernel in the
    first of ``cfgs`` with a profile that has attention (and the config's name)."""
    for cfg in cfgs:
        for p in cfg.profiles:
            steps = len(p.data.get("steps") or [])
            rows = [r for r in p.data.get("kernel_rows") or [] if r.get("category") == "attention"]
            if steps and rows:
                n = round(max(int(r["count"]) for r in rows) / steps)
                if n >= 2:
                    return n, cfg.name
    return None


def _measured_tau(src: ConfigEvidence) -> tuple[float | None, str]:
    """τ of a config that ran speculative decoding: its counters (1 + accepted / drafts,
    mean over load points), else its log's mean accept length, else the engine's gauge."""
    for key, what in (
        ("spec_accept_length", "/metrics counters: 1 + accepted / drafts"),
        (None, "its log: mean logged accept length"),
        ("max_spec_accept_length", "/metrics gauge: largest value scraped"),
    ):
        if key is None:
            logged = src.found("spec-accept")
            vals = [float(logged[-1]["evidence"]["accept_length_mean"])] if logged else []
        else:
            vals = [float(p.server[key]) for p in src.sweep.values() if key in p.server]
        if vals:
            return sum(vals) / len(vals), f"measured on {src.name} ({what})"
    return None, ""


def _delta(method: str, ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> tuple[float, str]:
    """δ: given; else the method's (0 for n-gram); else one layer of the target, from the
    config's profile or another of the campaign (same model); else assumed."""
    if opts.draft_cost is not None:
        return opts.draft_cost, "given (--draft-cost)"
    d = METHOD_DRAFT_COST.get(method)
    if d is not None:
        return d, f"{method}: no draft model on the GPU"
    found = _layers([cfg, *(c for c in ev.configs.values() if c is not cfg)])
    if found:
        n, where = found
        return 1.0 / n, f"one layer of {n}: attention launches per step in {where}'s profile"
    return DEFAULT_DRAFT_COST, f"assumed {DEFAULT_DRAFT_COST:g} (no profile; give --draft-cost)"


def spec_inputs(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> SpecInputs | None:
    """The candidate for ``cfg``: k and the method from a config of the campaign that runs
    speculative decoding (or --draft-tokens), τ from --accept-length, else that config's
    counters, else its log; None when no τ is known."""
    runs_spec = [c for c in ev.configs.values() if spec_of(c) is not None]
    with_tau = [(c, t, w) for c in runs_spec for t, w in [_measured_tau(c)] if t is not None]
    src = with_tau[0][0] if with_tau else (runs_spec[0] if runs_spec else None)
    sf = spec_of(src) if src is not None else None
    tau, tau_from = opts.accept_length, "given (--accept-length)"
    if tau is None and with_tau:
        tau, tau_from = with_tau[0][1], with_tau[0][2]
    if tau is None:
        return None
    if opts.draft_tokens is not None:
        k, k_from = opts.draft_tokens, "given (--draft-tokens)"
    elif sf is not None and sf.draft_tokens is not None:
        k, k_from = sf.draft_tokens, f"{src.name if src else ''}: {sf.source}"
    else:
        k, k_from = max(1, math.ceil(tau - 1)), "the fewest draft tokens that allow τ"
    method = sf.method if sf is not None else "unknown"
    delta, delta_from = _delta(method, ev, cfg, opts)
    flags = ""
    if src is not None:
        on = [[n, *v] for n, v in flags_of(src).items() if n.startswith(("--spec", "--num-spec"))]
        flags = shlex.join([t for x in on for t in x])
    return SpecInputs(
        method, k, tau, delta, src.name if src else None, tau_from, k_from, delta_from, flags
    )


def _band_text(p: SpecPoint) -> str:
    x = " extrapolated" if p.extrapolated else ""
    return f"C={p.concurrency} (×{p.low:.2f}–×{p.high:.2f}{x})"


def spec_sentence(band: list[SpecPoint], sat: Saturation | None) -> str:
    """``helps at C=1 (×1.3–×1.9), not from C=8 (×0.9–×1.05): decode saturates by C=8``."""
    first = first_without_help(band)
    helping = [p for p in band if first is None or p.concurrency < first.concurrency]
    if first is None:
        text = "helps at every measured point: " + ", ".join(_band_text(p) for p in band)
    elif not helping:
        text = f"does not help from {_band_text(first)}"
    else:
        text = f"helps at {', '.join(_band_text(p) for p in helping)}, not from {_band_text(first)}"
    if sat is not None and sat.saturated_at is not None:
        text += f": decode saturates by C={sat.saturated_at}"
    return text


@rule(
    "spec-decode",
    "speculative decoding",
    model="spec",
    diff=(r"^flag --speculative", r"^flag --num-speculative-tokens$"),
)
def _spec(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> list[Lever]:
    if not cfg.sweep or spec_of(cfg) is not None:
        return []
    si = spec_inputs(ev, cfg, opts)
    if si is None:
        return []
    band = spec_band(cfg.series(), k=si.k, tau=si.tau, delta=si.delta)
    pts = [
        PointBound(
            label_of(p.concurrency),
            p.concurrency,
            high=p.high,
            low=p.low,
            extrapolated=p.extrapolated,
            note=f"t({(si.k + 1) * p.concurrency}) = {p.verify_ms:.1f} ms"
            + (" (extrapolated)" if p.extrapolated else ""),
        )
        for p in band
    ]
    sat = saturation_of(cfg)
    title = f"speculative decoding ({si.method}, k={si.k}, τ={si.tau:.2f})"
    action = f"`{si.flags}`" if si.flags else f"speculative decoding with {si.k} draft tokens"
    first = first_without_help(band)
    if first is not None and first.concurrency > band[0].concurrency:
        action += f", below C={first.concurrency} only"
    summary = f"{title}: {spec_sentence(band, sat)} → {action}"
    ev_ = [
        f"{cfg.name} TPOT (median): " + ", ".join(f"C={c}: {t:.1f} ms" for c, t in cfg.series()),
        f"τ = {si.tau:.2f} tokens per verify step, {si.tau_from}",
        f"k = {si.k} ({si.k_from}); δ = {si.delta:.3f} ({si.delta_from})",
        f"verify ≤ {cfg.name}'s step at (k+1)·C tokens: " + ", ".join(p.note for p in pts),
    ]
    beyond = ", extrapolated beyond it" if any(p.extrapolated for p in band) else ""
    conf = (
        f"S_hi = τ holds only while decode is memory-bound; S_lo rests on {cfg.name}'s sweep "
        f"({len(band)} points{beyond}); "
        "MoE verify touches more experts and long contexts change the picture (docs/levers.md)"
    )
    return [Lever("spec-decode", title, cfg.name or None, "spec", pts, summary, ev_, action, conf)]


@rule("concurrency", "concurrency (the saturation knee)")
def _concurrency(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> list[Lever]:
    sat = saturation_of(cfg)
    if sat is None:
        return []
    ev_ = [f"sweep of {cfg.name}: {sat.sentence}"]
    ev_ += [f"log: {f['message']}" for f in cfg.found("decode-plateau")]
    if sat.saturated_at is not None:
        c = sat.saturated_at
        summary = (
            f"concurrency: {sat.sentence} → more concurrency will not help beyond C={c}; "
            "serve at C ≤ " + f"{c} (same throughput, lower TPOT) and shorten the step instead"
        )
        action = f"keep concurrency at or below C={c}; raise the ceiling with the levers above"
    else:
        summary = f"concurrency: {sat.sentence} → measure higher concurrency"
        action = "add higher concurrency points to the sweep"
    pts = [PointBound(label_of(c), c, None) for c in sorted(cfg.sweep)]
    conf = f"{len(cfg.sweep)} measured points of {cfg.name} (throughput: mean over trials)"
    return [
        Lever(
            "concurrency", "concurrency", cfg.name or None, "none", pts, summary, ev_, action, conf
        )
    ]


@rule(
    "memory",
    "memory fraction / running-request cap",
    diff=(
        r"^flag --(mem-fraction-static|gpu-memory-utilization|max-running-requests|"
        r"max-num-seqs|max-num-batched-tokens|chunked-prefill-size|cuda-graph-max-bs|"
        r"kv-cache-dtype)$",
    ),
)
def _memory(ev: Evidence, cfg: ConfigEvidence, opts: LeverOptions) -> list[Lever]:
    ev_ = [f"log: {f['message']}" for f in cfg.found("kv-pressure") + cfg.found("queueing")]
    capped = []
    for c, p in sorted(cfg.sweep.items()):
        run, wait = float(p.server.get("max_running", 0)), float(p.server.get("mean_waiting", 0))
        # a cap, not requests caught while a step admits them: a quarter of C or more kept
        # waiting on average over a trial's scrapes (server.scrape.MEAN_SCRAPES or more)
        if 0 < run <= CAPPED * c and wait >= (1 - CAPPED) * c:
            capped.append((c, int(run)))
            ev_.append(
                f"C={c}: at most {int(run)} requests ran, {wait:.1f} queued on average over "
                "the scrapes of a trial"
            )
    if not ev_:
        return []
    if capped:
        c, r = capped[0]
        summary = (
            f"running-request cap: at C={c} only {r} requests ran → at most ×{c / r:.2f} "
            "throughput (and less queueing in TTFT) if the cap rose to C, none of it in TPOT"
        )
    else:
        summary = "memory: " + ev_[0].removeprefix("log: ")
    action = next(
        (
            str(f["action"])
            for f in cfg.found("kv-pressure") + cfg.found("queueing")
            if f.get("action")
        ),
        "raise the running-request cap (--max-running-requests / --max-num-seqs) or the KV "
        "memory (--mem-fraction-static / --gpu-memory-utilization)",
    )
    conf = (
        "scraped running/waiting gauges and log findings; the throughput figure assumes the "
        "step does not grow with the batch"
    )
    pts = [PointBound(label_of(c), c, None) for c, _ in capped]
    return [
        Lever(
            "memory",
            "memory / running cap",
            cfg.name or None,
            "none",
            pts,
            summary,
            ev_,
            action,
            conf,
        )
    ]
