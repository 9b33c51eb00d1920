"""Kineto traces synthesized from the SIMULATED engine's timing model (one file per TP rank).

Each recorded step becomes what a PyTorch profiler trace of SGLang shows: a ``user_annotation``
and a ``gpu_user_annotation`` named like SGLang's step spans (``step[DECODE bs=16]``,
``step[EXTEND bs=2 toks=128]``), one ``cudaGraphLaunch`` (or, past ``--cuda-graph-max-bs``, one
``cudaLaunchKernel`` per kernel) and the preset's kernels (:mod:`inferlab.sim.kernels`) with their
grids, layer by layer, with the idle time spread between layers. Times are the model's (µs,
before ``--time-scale``), so a step lasts exactly ``step_ms`` of the model. Ranks differ a little
(deterministically): a rank computes up to 1% longer or shorter, at most half the all-reduce's
time, which waits out the difference, so the step span is the same on all.

The top-level ``inferlab`` block says SIMULATED; ``inferlab profile`` keeps it, and everything
derived from the trace says so too.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from inferlab import __version__
from inferlab.sim.kernels import KernelSpec, ProfileMix
from inferlab.sim.model import StepModel
from inferlab.sim.presets import Levers, Preset

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["StepRecord", "TraceContext", "components", "kernel_times", "write_trace"]

STREAM = 7
_HOST_TID = 1


@dataclass(frozen=True)
class StepRecord:
    """One step the engine ran while profiling: start (µs, model time), what was in it."""

    ts_us: float
    batch: int
    prefill_tokens: int
    joining: int
    eager: bool


@dataclass(frozen=True)
class TraceContext:
    """What every rank's trace of one capture shares."""

    preset: Preset
    mix: ProfileMix
    model: StepModel
    levers: Levers
    ranks: int
    seed: int
    profile_id: str
    activities: tuple[str, ...] = ("CPU", "GPU")


def components(model: StepModel, batch: int, prefill_tokens: int) -> dict[str, float]:
    """The step's ms per model component (fixed is added by :func:`kernel_times`)."""
    spec = model.spec
    if spec is None:
        per = model.per_seq_ms * min(batch, model.saturation)
        over = model.per_seq_over_ms * max(0.0, batch - model.saturation)
        draft = 0.0
    else:
        tokens = (spec.draft_tokens + 1) * batch
        per = spec.verify_per_token_ms * min(tokens, spec.verify_sat_tokens)
        over = spec.verify_per_token_over_ms * max(0.0, tokens - spec.verify_sat_tokens)
        draft = spec.draft_fixed_ms + spec.draft_per_seq_ms * batch
    prefill = model.prefill_per_token_ms * prefill_tokens
    return {"per_seq": per, "over": over, "prefill": prefill, "draft": draft}


def _savings(preset: Preset, levers: Levers) -> dict[str, float]:
    out = {}
    if levers.tuned_fp8:
        out["tuned_fp8"] = preset.tuned_fp8_saving_ms
    if (levers.nccl_proto or "").upper() == "LL":
        out["nccl_ll"] = preset.nccl_ll_saving_ms
    return out


def kernel_times(
    ctx: TraceContext, batch: int, prefill_tokens: int, eager: bool
) -> tuple[list[tuple[KernelSpec, float]], float]:
    """Each kernel's ms in the step, and the GPU idle ms; they sum to the model's ``step_ms``."""
    comp = {"fixed": ctx.preset.fixed_ms, **components(ctx.model, batch, prefill_tokens)}
    savings = _savings(ctx.preset, ctx.levers)
    tagged = {
        lv: sum(k.shares["fixed"] for k in ctx.mix.kernels if k.lever == lv) for lv in savings
    }
    out = []
    for k in ctx.mix.kernels:
        t = sum(k.shares.get(c, 0.0) * v for c, v in comp.items())
        if k.lever in savings and tagged[k.lever] > 0:
            t -= savings[k.lever] * k.shares["fixed"] / tagged[k.lever]
        if t > 0:
            out.append((k, t))
    idle = sum(ctx.mix.idle.get(c, 0.0) * v for c, v in comp.items())
    if eager:  # the model's penalty: launches the GPU waits for
        idle += (sum(t for _, t in out) + idle) * (ctx.model.eager_penalty - 1.0)
    return out, idle


def _rank_draw(ctx: TraceContext, rank: int) -> float:
    """A rank's compute draw in [−1, 1] (rank 0: 0), the same in every step of a capture."""
    if rank == 0:
        return 0.0
    return random.Random(ctx.seed * 1000 + rank).uniform(-1.0, 1.0)


def _step_name(s: StepRecord) -> str:
    """SGLang's span name (``build_step_span_name``)."""
    if s.prefill_tokens:
        return f"step[EXTEND bs={s.batch} toks={s.prefill_tokens}]"
    return f"step[DECODE bs={s.batch}]"


def _nccl_name(ctx: TraceContext, name: str) -> str:
    proto = "LL" if (ctx.levers.nccl_proto or "").upper() == "LL" else ctx.mix.nccl_proto_default
    return name.replace("{proto}", proto)


def _scaled(ctx: TraceContext, times: list[tuple[KernelSpec, float]], rank: int) -> list[float]:
    """Each kernel's ms on ``rank``: compute up to 1% longer or shorter — at most half of what
    the all-reduce can wait out — and the all-reduce waiting out the difference, so the span is
    the same on every rank (a preset without one: every rank alike)."""
    comm = {i for i, (k, _) in enumerate(times) if k.lever == "nccl_ll" or "nccl" in k.name}
    rest = sum(t for i, (_, t) in enumerate(times) if i not in comm)
    wait = sum(times[i][1] for i in comm)
    more = _rank_draw(ctx, rank) * min(0.01 * rest, 0.5 * wait)  # ms of compute this rank adds
    factor = 1.0 + more / rest if rest > 0 else 1.0
    return [t * (1.0 - more / wait) if i in comm else t * factor for i, (_, t) in enumerate(times)]


def _order(times: list[tuple[KernelSpec, float]], layers: int) -> list[tuple[int, int]]:
    """(kernel index, layer) in launch order: draft kernels first, per-layer ones layer by
    layer, the once-per-step ones (sampling) last."""
    once = [i for i, (k, _) in enumerate(times) if not k.per_layer]
    first = [(i, 0) for i in once if times[i][0].shares.get("draft")]
    last = [(i, layers - 1) for i in once if not times[i][0].shares.get("draft")]
    each = [i for i, (k, _) in enumerate(times) if k.per_layer]
    return first + [(i, layer) for layer in range(layers) for i in each] + last


def _step_events(
    ctx: TraceContext, s: StepRecord, rank: int, corr: int
) -> Iterator[dict[str, JsonValue]]:
    times, idle = kernel_times(ctx, s.batch, s.prefill_tokens, s.eager)
    scaled = _scaled(ctx, times, rank)
    span = (sum(t for _, t in times) + idle) * 1000.0
    layers = ctx.mix.layers
    gap = idle * 1000.0 / (layers + 1)
    name = _step_name(s)
    host = {"pid": 10_000 + rank, "tid": _HOST_TID}
    gpu = {"pid": rank, "tid": STREAM}
    yield {"ph": "X", "cat": "user_annotation", "name": name, **host, "ts": s.ts_us, "dur": span}
    if "GPU" not in ctx.activities:
        return
    yield {"ph": "X", "cat": "gpu_user_annotation", "name": name, **gpu, "ts": s.ts_us, "dur": span}
    if not s.eager:
        yield {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaGraphLaunch",
            **host,
            "ts": s.ts_us,
            "dur": 8.0,
            "args": {"correlation": corr},
        }
    t, layer_now = s.ts_us + gap, 0
    for n, (i, layer) in enumerate(_order(times, layers)):
        if layer != layer_now:
            t, layer_now = t + gap, layer
        k = times[i][0]
        dur = scaled[i] * 1000.0 / (layers if k.per_layer else 1)
        c = corr + 1 + n if s.eager else corr
        if s.eager:
            yield {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                **host,
                "ts": max(t - 4.0, s.ts_us),
                "dur": 3.0,
                "args": {"correlation": c},
            }
        x = k.grid[0] * (s.batch if k.grid_per_seq else 1)
        yield {
            "ph": "X",
            "cat": "kernel",
            "name": _nccl_name(ctx, k.name),
            **gpu,
            "ts": t,
            "dur": dur,
            "args": {
                "device": rank,
                "stream": STREAM,
                "correlation": c,
                "grid": [x, k.grid[1], k.grid[2]],
                "block": [128, 1, 1],
            },
        }
        t += dur


def _header(ctx: TraceContext, rank: int) -> dict[str, JsonValue]:
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {"id": r, "name": ctx.mix.device, "numSms": ctx.mix.sm_count} for r in range(ctx.ranks)
        ],
        "inferlab": {
            "simulated": True,
            "note": "SIMULATED: synthesized by inferlab sim from its timing model, not recorded",
            "engine": f"inferlab sim {__version__}",
            "preset": ctx.preset.name,
            "rank": rank,
            "ranks": ctx.ranks,
            "levers": ctx.levers.model_dump(exclude_defaults=True),
            "time_base": "model ms before --time-scale",
        },
    }


def _write(
    fh: IO[str], header: dict[str, JsonValue], events: Iterator[dict[str, JsonValue]]
) -> None:
    """Kineto's layout (one event per ``\\n  {...\\n  }`` block), which the fast reader cuts."""
    head = json.dumps(header, indent=2)[:-2]
    fh.write(head + ',\n  "traceEvents": [')
    sep = "\n  {"
    for ev in events:
        fh.write(sep + "\n    " + json.dumps(ev)[1:-1] + "\n  }")
        sep = ",\n  {"
    fh.write('\n  ],\n  "traceName": "SIMULATED"\n}\n')


def write_trace(path: Path, ctx: TraceContext, steps: list[StepRecord], rank: int) -> int:
    """Write rank ``rank``'s trace of ``steps`` (gzip); returns its size in bytes."""

    def events() -> Iterator[dict[str, JsonValue]]:
        for i, s in enumerate(steps):
            yield from _step_events(ctx, s, rank, corr=(i + 1) * 100_000)

    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as fh:
        _write(fh, _header(ctx, rank), events())
    return path.stat().st_size
