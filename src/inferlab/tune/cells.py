"""One cell (N, K, M) on one GPU: rotating operand sets, the cheap screen, the full re-time
of the leaders and the default, and the reference check of the winners.

torch and the kernel module come in through :class:`ShapeContext` (nothing is imported here)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from inferlab.errors import TuneError
from inferlab.tune.config import KernelConfig
from inferlab.tune.gpu import triton_version
from inferlab.tune.plan import leaders, select_retime
from inferlab.tune.results import CellResult
from inferlab.tune.roofline import Ceilings, gemm_bytes, gemm_flops, roof_pct
from inferlab.tune.timing import L2_BYTES_H200, copies_needed, median

__all__ = [
    "MAX_REL_ERR",
    "ShapeContext",
    "alloc_shape",
    "finish_cell",
    "kernel_samples",
    "screen_cell",
    "tune_cell",
]

#: a winner's relative error vs the float32 dequantized reference must not exceed this
MAX_REL_ERR = 5e-3
#: launches per graph when screening (capped by the rotating copies a cell needs, at least 2)
SCREEN_LAUNCHES = 8
#: launches per graph and timed replays when re-timing
RETIME_LAUNCHES = 20
RETIME_REPLAYS = 10
#: configs per batch of captured graphs while screening
SCREEN_BATCH = 16


@dataclass
class ShapeContext:
    torch: Any
    kernel: Any
    n: int
    k: int
    sets: list[Any]
    ceilings: Ceilings
    seed: int = 0
    tops: dict[int, list[KernelConfig]] = field(default_factory=dict)


def alloc_shape(torch: Any, kernel: Any, n: int, k: int, ms: Sequence[int]) -> list[Any]:
    """Rotating operand sets for a shape, sized for its largest M, as many as its smallest M
    needs to exceed 3× L2."""
    dev = torch.device("cuda", torch.cuda.current_device())
    l2 = int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0)) or L2_BYTES_H200
    copies = copies_needed(gemm_bytes(min(ms), n, k), l2)
    max_m = max(ms)
    return [kernel.make_operands(max_m, n, k, device=dev) for _ in range(copies)]


def _launchers(
    ctx: ShapeContext, m: int, cfgs: Sequence[KernelConfig]
) -> tuple[Callable[[KernelConfig], Callable[[int], None]], int]:
    """A launcher factory for batch size ``m`` over the shape's rotating operand sets (with a
    split-K workspace big enough for ``cfgs``), and how many sets a launch rotates over."""
    torch, kernel, n, k = ctx.torch, ctx.kernel, ctx.n, ctx.k
    dev = torch.device("cuda", torch.cuda.current_device())
    l2 = int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0)) or L2_BYTES_H200
    ncopy = min(len(ctx.sets), copies_needed(gemm_bytes(m, n, k), l2))
    views = [s.rows(m) for s in ctx.sets[:ncopy]]
    splits = [c for c in cfgs if c.split_k > 1]
    ws = None
    if splits:
        need = [kernel.workspace_elems(c, m, n) for c in splits]
        ws = kernel.make_workspace(max(p for p, _ in need), max(t for _, t in need), dev)

    def launcher(cfg: KernelConfig) -> Callable[[int], None]:
        return lambda i: kernel.launch(cfg, views[i % ncopy], m, workspace=ws)

    return launcher, ncopy


def _runnable(
    ctx: ShapeContext, launcher: Callable[[KernelConfig], Callable[[int], None]], cfgs: Any
) -> list[KernelConfig]:
    """The configs of ``cfgs`` that launch at all (one launch each; a failure is not fatal)."""
    ok: list[KernelConfig] = []
    for cfg in dict.fromkeys(cfgs):
        try:
            launcher(cfg)(0)
            ok.append(cfg)
        except Exception:
            continue
    ctx.torch.cuda.synchronize()
    return ok


def screen_cell(
    ctx: ShapeContext, m: int, cands: Sequence[KernelConfig]
) -> tuple[list[tuple[KernelConfig, float]], int]:
    """Screen ``cands`` at batch size ``m``: (config, best µs of 2 short graph replays) for
    every one that runs, and how many did not run."""
    launcher, ncopy = _launchers(ctx, m, cands)
    runnable = _runnable(ctx, launcher, cands)
    screened: list[tuple[KernelConfig, float]] = []
    n_launch = max(2, min(SCREEN_LAUNCHES, ncopy))
    for i in range(0, len(runnable), SCREEN_BATCH):
        batch = runnable[i : i + SCREEN_BATCH]
        samples = kernel_samples(ctx.torch, [launcher(c) for c in batch], n_launch, 2)
        screened += [(c, min(s)) for c, s in zip(batch, samples)]
    return screened, len(set(cands)) - len(runnable)


def finish_cell(
    ctx: ShapeContext,
    m: int,
    screened: Sequence[tuple[KernelConfig, float]],
    n_cands: int,
    default: KernelConfig,
    source: str,
    failed: int = 0,
    t0: float | None = None,
    count_default: bool = True,
) -> CellResult:
    """Re-time the screen's leaders and the default by the full method, take the fastest
    that pass the reference check (engine-usable and overall), and describe the cell.
    ``failed`` configs did not run in the screen; a default that does not run adds one
    (``count_default``: it was not among the screened candidates)."""
    t0 = time.perf_counter() if t0 is None else t0
    n, k = ctx.n, ctx.k
    wanted = select_retime(screened, default)
    launcher, ncopy = _launchers(ctx, m, wanted)
    retime = _runnable(ctx, launcher, wanted)
    failed += count_default and default not in retime
    if not screened and default not in retime:
        raise TuneError(f"N={n},K={k},M={m}: no config ran (default {default.key} failed too)")
    samples = kernel_samples(
        ctx.torch, [launcher(c) for c in retime], max(RETIME_LAUNCHES, ncopy), RETIME_REPLAYS
    )
    timed = dict(zip(retime, samples))
    ranked = sorted(timed, key=lambda c: median(timed[c]))
    checked: dict[KernelConfig, float] = {}

    def first_correct(pool: list[KernelConfig]) -> KernelConfig:
        for c in pool:
            if c not in checked:
                ctx.seed += 1
                checked[c] = ctx.kernel.reference_check(c, m, n, k, seed=ctx.seed)
            if checked[c] <= MAX_REL_ERR:
                return c
        bad = ", ".join(f"{c.key}: {checked[c]:.2e}" for c in pool)
        raise TuneError(f"N={n},K={k},M={m}: no config passed the reference check ({bad})")

    best_engine = first_correct([c for c in ranked if c.split_k == 1])
    best = first_correct(ranked)
    out = _cell(ctx, m, timed, best, best_engine, default)
    out.rel_err = max(checked[best], checked[best_engine])
    out.candidates, out.screened, out.source, out.failed = n_cands, len(screened), source, failed
    out.seconds = time.perf_counter() - t0
    return out


def _cell(
    ctx: ShapeContext,
    m: int,
    timed: dict[KernelConfig, list[float]],
    best: KernelConfig,
    best_engine: KernelConfig,
    default: KernelConfig,
) -> CellResult:
    """A cell's result from its re-timed samples (check, counts and seconds set by the caller)."""
    n, k = ctx.n, ctx.k
    be_us, b_us = median(timed[best_engine]), median(timed[best])
    dflt = timed.get(default, [])
    return CellResult(
        n=n,
        k=k,
        m=m,
        default=default,
        default_us=median(dflt),
        best=best,
        best_us=b_us,
        best_engine=best_engine,
        best_engine_us=be_us,
        samples_us=list(timed[best_engine]),
        tflops=gemm_flops(m, n, k) / (be_us * 1e6),
        gbps=gemm_bytes(m, n, k) / (be_us * 1e3),
        roof_pct=roof_pct(m, n, k, be_us, ctx.ceilings),
        rel_err=math.nan,
        candidates=0,
        screened=0,
        best_samples_us=list(timed[best]),
        default_samples_us=list(dflt),
        best_roof_pct=roof_pct(m, n, k, b_us, ctx.ceilings),
        gpu_name=str(ctx.torch.cuda.get_device_name()),
        triton=triton_version(),
    )


def tune_cell(
    ctx: ShapeContext,
    m: int,
    cands: list[KernelConfig],
    n_cands: int,
    default: KernelConfig,
    source: str,
) -> CellResult:
    """Screen ``cands`` at ``m``, keep the leaders for the neighbours, then finish the cell."""
    t0 = time.perf_counter()
    screened, failed = screen_cell(ctx, m, cands)
    ctx.tops[m] = leaders(screened) if screened else []
    alone = default not in set(cands)
    return finish_cell(ctx, m, screened, n_cands, default, source, failed, t0, alone)


def kernel_samples(
    torch: Any, launchers: Sequence[Callable[[int], None]], launches: int, replays: int
) -> list[list[float]]:
    """Graph-replay samples (µs per launch) for each launcher; see :mod:`inferlab.tune.timing`."""
    from inferlab.tune.timing import graph_samples

    if not launchers:
        return []
    return graph_samples(torch, launchers, launches=launches, replays=replays, warmup=1)
