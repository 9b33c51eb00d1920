"""The search: compile once in parallel, screen cheaply, re-time the top, reuse across M.

For every shape (N, K) and batch size M (a *cell*):

1. candidates from :func:`inferlab.tune.space.candidates` (the engines' grid pruned by shared
   memory, BLOCK_SIZE_M vs M and GROUP_SIZE_M equivalence, plus split-K for small M);
2. every distinct binary is compiled once, before any timing, in a pool of processes
   (M, GROUP_SIZE_M and split factor are runtime arguments, so a binary serves every cell);
3. *screen*: each candidate is timed by a short CUDA-graph replay (``SCREEN_LAUNCHES`` launches
   over rotating inputs, best of 2 replays);
4. *re-time*: the ``RETIME_ENGINE`` fastest engine-usable and ``RETIME_SPLIT`` fastest split-K
   candidates, plus the default config, are timed by the full method (≥ 20 launches over inputs
   > 3× L2, 10 interleaved replays, median) — :mod:`inferlab.tune.timing`;
5. the winner (and the best engine-usable config) must pass the reference check
   (:func:`inferlab.tune.kernel.reference_check`, relative error ≤ ``MAX_REL_ERR``); a config
   that fails it is dropped and the next one taken;
6. *neighbour reuse*: batch sizes alternate between anchors (fully screened) and neighbours,
   which screen only the config families (BM, BN, warps, stages, split) among the leaders of
   the anchors on either side, when those are within 2× of each other
   (:func:`plan_batch_sizes`, :func:`neighbour_candidates`).

With several GPUs the (shape, run of M) work units are spread over one process per GPU
(:func:`split_units`) and the results merged per shape (:func:`merge_results`), which refuses a
merge that lost or duplicated any batch size.

torch and triton are imported lazily: everything but :func:`tune_shapes` runs on a CPU.
"""

from __future__ import annotations

import math
import os
import queue
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from inferlab.errors import TuneError
from inferlab.tune.config import DEFAULT_SGLANG, KernelConfig
from inferlab.tune.plan import (
    MPlan,
    WorkUnit,
    cell_candidates,
    engine_device_name,
    family,
    leaders,
    merge_results,
    neighbour_candidates,
    plan_batch_sizes,
    select_retime,
    split_units,
    unit_cost,
    work_units,
)
from inferlab.tune.results import RESULT_VERSION, CellResult, TuneRun
from inferlab.tune.roofline import Ceilings, gemm_bytes, gemm_flops, roof_pct
from inferlab.tune.timing import L2_BYTES_H200, copies_needed, median

__all__ = [
    "MAX_REL_ERR",
    "RESULT_VERSION",
    "CellResult",
    "MPlan",
    "ShapeContext",
    "TuneRun",
    "WorkUnit",
    "alloc_shape",
    "binary_rep",
    "compile_binaries",
    "engine_device_name",
    "family",
    "finish_cell",
    "leaders",
    "merge_results",
    "neighbour_candidates",
    "plan_batch_sizes",
    "require_gpu_stack",
    "screen_cell",
    "select_retime",
    "split_units",
    "triton_version",
    "tune_shapes",
    "unit_cost",
    "work_units",
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


class CandidateFn(Protocol):
    def __call__(self, m: int, n: int, k: int, *, split_k: bool = ...) -> list[KernelConfig]: ...


# ------------------------------------------------------------------ GPU side


def require_gpu_stack() -> Any:
    """Import torch and check for a CUDA device; raises :class:`TuneError` saying what is
    missing. Returns the torch module."""
    try:
        import torch
    except ImportError as exc:
        raise TuneError(
            "tuning needs PyTorch with CUDA and Triton on a machine with an NVIDIA GPU "
            f"(import torch failed: {exc}); install torch (it brings triton) where the GPU is"
        ) from exc
    try:
        import triton  # noqa: F401
    except ImportError as exc:
        raise TuneError(f"tuning needs Triton (import triton failed: {exc})") from exc
    if not torch.cuda.is_available():
        raise TuneError("tuning needs a CUDA GPU: torch.cuda.is_available() is False")
    return torch


def binary_rep(cfg: KernelConfig) -> KernelConfig:
    """The representative config of ``cfg``'s compiled binary (runtime arguments normalized)."""
    return KernelConfig(
        cfg.block_m,
        cfg.block_n,
        cfg.block_k,
        1,
        cfg.num_warps,
        cfg.num_stages,
        2 if cfg.split_k > 1 else 1,
    )


def _compile_one(cfg: KernelConfig, n: int, k: int) -> tuple[KernelConfig, int, int, float, str]:
    t0 = time.perf_counter()
    try:
        from inferlab.tune import kernel

        kernel.warm(cfg, n, k)
        err = ""
    except Exception as exc:  # a config that cannot compile is excluded, not fatal
        err = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return cfg, n, k, time.perf_counter() - t0, err


def compile_binaries(
    specs: Sequence[tuple[KernelConfig, int, int]],
    *,
    workers: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[float, dict[tuple[KernelConfig, int, int], str]]:
    """Compile every (binary representative, N, K) into Triton's on-disk cache in a pool of
    spawned processes; returns (wall seconds, {spec: error} for those that failed)."""
    import concurrent.futures as cf
    import multiprocessing as mp

    t0 = time.perf_counter()
    if not specs:
        return 0.0, {}
    nproc = workers or max(1, min(len(specs), (os.cpu_count() or 2) - 1))
    order = sorted(specs, key=lambda s: -(s[0].block_m * s[0].block_n * s[0].num_stages))
    failed: dict[tuple[KernelConfig, int, int], str] = {}
    done = 0
    with cf.ProcessPoolExecutor(max_workers=nproc, mp_context=mp.get_context("spawn")) as pool:
        futs = [pool.submit(_compile_one, c, n, k) for c, n, k in order]
        for fut in cf.as_completed(futs):
            cfg, n, k, _sec, err = fut.result()
            done += 1
            if err:
                failed[(cfg, n, k)] = err
            if progress and (done % 50 == 0 or done == len(futs)):
                progress(f"compiled {done}/{len(futs)} binaries ({time.perf_counter() - t0:.1f} s)")
    return time.perf_counter() - t0, failed


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


def triton_version() -> str:
    """The installed Triton's version ("" without Triton)."""
    try:
        import triton
    except ImportError:
        return ""
    return str(getattr(triton, "__version__", ""))


def _tune_cell(
    ctx: ShapeContext,
    m: int,
    cands: list[KernelConfig],
    n_cands: int,
    default: KernelConfig,
    source: str,
) -> CellResult:
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


def _default_candidates() -> CandidateFn:
    from inferlab.tune.space import candidates

    return candidates


def _tune_units(
    units: Sequence[WorkUnit],
    *,
    default: KernelConfig,
    split_k: bool,
    candidates_fn: CandidateFn,
    exclude: set[tuple[KernelConfig, tuple[bool, ...]]],
    progress: Callable[[str], None] | None,
) -> tuple[str, Ceilings, list[CellResult]]:
    """Tune ``units`` on the current CUDA device; returns (engine device name, ceilings, cells)."""
    torch = require_gpu_stack()
    from inferlab.tune import kernel
    from inferlab.tune.roofline import measure_ceilings

    ceilings = measure_ceilings(torch)
    if progress:
        progress(
            f"ceilings: copy {ceilings.copy_gbps:.0f} GB/s, fp8 {ceilings.fp8_tflops:.0f} TFLOP/s"
        )
    name = engine_device_name(torch.cuda.get_device_name())
    out: list[CellResult] = []
    for unit in units:
        ms = [p.m for p in unit.plan]
        cls = kernel.spec_class(unit.n, unit.k)
        ctx = ShapeContext(torch, kernel, unit.n, unit.k, [], ceilings, seed=unit.n * 7 + unit.k)
        ctx.sets = alloc_shape(torch, kernel, unit.n, unit.k, ms)
        order = [p for p in unit.plan if not p.sources] + [p for p in unit.plan if p.sources]
        for p in order:
            cands = [
                c
                for c in candidates_fn(p.m, unit.n, unit.k, split_k=split_k)
                if (binary_rep(c), cls) not in exclude
            ]
            use, source = cell_candidates(cands, p, ctx.tops)
            r = _tune_cell(ctx, p.m, use, len(cands), default, source)
            out.append(r)
            if progress:
                progress(
                    f"N={r.n} K={r.k} M={r.m}: default {r.default_us:.1f} µs → "
                    f"{r.best_engine.key} {r.best_engine_us:.1f} µs ({r.speedup:.2f}×)"
                    + (f", split-K {r.best.key} {r.best_us:.1f} µs" if r.best.split_k > 1 else "")
                    + f", {r.roof_pct:.0f}% roof; {r.screened}/{r.candidates} screened"
                    + f" ({source}), {r.seconds:.1f} s"
                )
        del ctx
        torch.cuda.empty_cache()
    return name, ceilings, out


def _device_main(
    device: int,
    units: list[WorkUnit],
    kwargs: dict[str, Any],
    q: Any,
) -> None:
    """Entry of one per-GPU process: tune ``units`` on ``device`` and put the outcome on ``q``."""
    try:
        import torch

        torch.cuda.set_device(device)
        res = _tune_units(units, progress=lambda s: q.put(("progress", device, s)), **kwargs)
        q.put(("result", device, res))
    except BaseException as exc:  # reported to the parent, which raises TuneError
        q.put(("error", device, f"{type(exc).__name__}: {exc}"))


def tune_shapes(
    shapes: Sequence[tuple[int, int]],
    batch_sizes: Sequence[int],
    *,
    split_k: bool = True,
    devices: Sequence[int] | None = None,
    default: KernelConfig = DEFAULT_SGLANG,
    progress: Callable[[str], None] | None = None,
    candidates_fn: CandidateFn | None = None,
    compile_workers: int | None = None,
) -> TuneRun:
    """Tune every (N, K) in ``shapes`` at every M in ``batch_sizes`` on the given CUDA devices
    (default: all visible). Raises :class:`TuneError` without torch/triton/GPU, when a cell has
    no correct config, or when a device process fails (naming its cells)."""
    t_start = time.perf_counter()
    torch = require_gpu_stack()
    from inferlab.tune import kernel

    shapes = list(dict.fromkeys((int(n), int(k)) for n, k in shapes))
    devs = list(devices) if devices is not None else list(range(torch.cuda.device_count()))
    if not devs:
        raise TuneError("no CUDA device to tune on")
    cand_fn = candidates_fn or _default_candidates()
    units = work_units(shapes, batch_sizes, len(devs))

    specs: dict[tuple[KernelConfig, tuple[bool, ...]], tuple[KernelConfig, int, int]] = {}
    for n, k in shapes:
        cls = kernel.spec_class(n, k)
        for m in sorted(set(batch_sizes)):
            for c in [*cand_fn(m, n, k, split_k=split_k), default]:
                rep = binary_rep(c)
                specs.setdefault((rep, cls), (rep, n, k))
    if progress:
        progress(f"compiling {len(specs)} distinct binaries")
    compile_s, failed = compile_binaries(
        list(specs.values()), workers=compile_workers, progress=progress
    )
    exclude = {(c, kernel.spec_class(n, k)) for c, n, k in failed}
    kwargs: dict[str, Any] = {
        "default": default,
        "split_k": split_k,
        "candidates_fn": cand_fn,
        "exclude": exclude,
    }
    if len(devs) == 1:
        torch.cuda.set_device(devs[0])
        name, ceilings, results = _tune_units(units, progress=progress, **kwargs)
        parts = [results]
    else:
        name, ceilings, parts = _run_devices(devs, units, kwargs, progress)
    merged = merge_results(parts, shapes, batch_sizes)
    return TuneRun(
        device_name=name,
        devices=len(devs),
        ceilings=ceilings.to_json(),
        results=merged,
        wall_s=time.perf_counter() - t_start,
        compile_s=compile_s,
        binaries=len(specs),
        compile_failed=sorted(f"{c.key} N={n} K={k}: {e}" for (c, n, k), e in failed.items()),
    )


def _run_devices(
    devs: list[int],
    units: list[WorkUnit],
    kwargs: dict[str, Any],
    progress: Callable[[str], None] | None,
) -> tuple[str, Ceilings, list[list[CellResult]]]:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    assign = split_units(units, len(devs))
    procs = {}
    for dev, mine in zip(devs, assign):
        if mine:
            p = ctx.Process(target=_device_main, args=(dev, mine, kwargs, q), daemon=True)
            p.start()
            procs[dev] = p
    results: dict[int, tuple[str, Ceilings, list[CellResult]]] = {}
    errors: dict[int, str] = {}
    while len(results) + len(errors) < len(procs):
        try:
            kind, dev, payload = q.get(timeout=5.0)
        except queue.Empty:
            for dev, p in procs.items():
                if dev not in results and dev not in errors and not p.is_alive():
                    errors[dev] = f"process exited with code {p.exitcode} and no result"
            continue
        if kind == "progress":
            if progress:
                progress(f"[cuda:{dev}] {payload}")
        elif kind == "result":
            results[dev] = payload
        else:
            errors[dev] = payload
    for p in procs.values():
        p.join(timeout=30)
    if errors:
        lost = []
        for dev, msg in sorted(errors.items()):
            cells = [f"N={u.n},K={u.k},M={p.m}" for u in assign[devs.index(dev)] for p in u.plan]
            lost.append(f"cuda:{dev} failed ({msg}); its cells: {', '.join(cells)}")
        raise TuneError("; ".join(lost))
    first = results[min(results)]
    return first[0], first[1], [r[2] for r in results.values()]
