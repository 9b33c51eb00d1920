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

import queue
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from inferlab.errors import TuneError
from inferlab.tune.cells import (
    MAX_REL_ERR,
    ShapeContext,
    alloc_shape,
    finish_cell,
    screen_cell,
    tune_cell,
)
from inferlab.tune.config import DEFAULT_SGLANG, KernelConfig
from inferlab.tune.gpu import binary_rep, compile_binaries, require_gpu_stack, triton_version
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
from inferlab.tune.roofline import Ceilings

#: the entry point of the GPU side (docs/tune.md) also gives the names of the modules below it
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

Specs = dict[tuple[KernelConfig, tuple[bool, ...]], tuple[KernelConfig, int, int]]


class CandidateFn(Protocol):
    def __call__(self, m: int, n: int, k: int, *, split_k: bool = ...) -> list[KernelConfig]: ...


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
            r = tune_cell(ctx, p.m, use, len(cands), default, source)
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
    specs = _binary_specs(kernel, shapes, batch_sizes, cand_fn, split_k, default)
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


def _binary_specs(
    kernel: Any,
    shapes: Sequence[tuple[int, int]],
    batch_sizes: Sequence[int],
    cand_fn: CandidateFn,
    split_k: bool,
    default: KernelConfig,
) -> Specs:
    """(binary representative, spec class) → (representative, N, K): each distinct binary
    that some cell's candidates (or the default) need, once."""
    specs: Specs = {}
    for n, k in shapes:
        cls = kernel.spec_class(n, k)
        for m in sorted(set(batch_sizes)):
            for c in [*cand_fn(m, n, k, split_k=split_k), default]:
                rep = binary_rep(c)
                specs.setdefault((rep, cls), (rep, n, k))
    return specs


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
