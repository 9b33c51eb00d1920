"""``inferlab tune fp8-gemm --ray ADDRESS``: the block-FP8 GEMM search on every GPU of a cluster.

One actor per GPU (``num_gpus=1``). The work is cut fine — compile chunks, then screen items
of (shape × M × chunk of configs), then one finish item per cell — and handed out by
``ray.util.ActorPool.map_unordered``, so a fast GPU takes more items and nothing waits on a
static split. The rounds follow the local search (:mod:`inferlab.tune.runner`): anchors are
screened first; neighbours then screen the families their anchors led with; each cell is then
re-timed by the full method and reference-checked on one GPU. The driver merges the cells
with the local rule (:func:`inferlab.tune.plan.merge_results`: no M is ever lost or doubled).
The GPU work is a ``TuneWork`` (:mod:`inferlab.cluster.tunework`); tests give fake ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from inferlab.cluster.connect import alive_nodes, connect
from inferlab.cluster.tunework import (
    CompileItem,
    FinishItem,
    GpuWork,
    ScreenItem,
    Spec,
    Timed,
    TuneActor,
    TuneWork,
)
from inferlab.errors import InferlabError, TuneError
from inferlab.tune.config import DEFAULT_SGLANG, KernelConfig, spec_class
from inferlab.tune.plan import (
    MPlan,
    cell_candidates,
    engine_device_name,
    leaders,
    merge_results,
    plan_batch_sizes,
)
from inferlab.tune.results import CellResult, TuneRun

__all__ = ["CHUNK", "COMPILE_CHUNK", "tune_shapes_ray"]

#: configs per screen item (a few seconds of screening on an H200)
CHUNK = 32
#: binaries per compile item
COMPILE_CHUNK = 64


def _chunks(seq: Sequence[Any], size: int) -> Iterable[tuple[Any, ...]]:
    for i in range(0, len(seq), max(1, size)):
        yield tuple(seq[i : i + size])


class _Search:
    """The driver's side of one search: rounds over an ``ActorPool``, merged per cell."""

    def __init__(self, ray: Any, pool: Any, progress: Callable[[str], None] | None) -> None:
        self.ray, self.pool, self.progress = ray, pool, progress
        self.screened: dict[tuple[int, int, int], list[Timed]] = {}
        self.failed: dict[tuple[int, int, int], int] = {}
        self.per_actor: dict[int, int] = {}

    def round(self, what: str, items: list[Any]) -> list[tuple[Any, Any]]:
        """Every item through the pool, unordered; a failed item is a ``TuneError``."""
        from ray.exceptions import RayError, RayTaskError

        out: list[tuple[Any, Any]] = []
        try:
            for item, value, actor in self.pool.map_unordered(lambda a, v: a.run.remote(v), items):
                out.append((item, value))
                self.per_actor[actor] = self.per_actor.get(actor, 0) + 1
        except RayError as exc:
            cause = exc.cause if isinstance(exc, RayTaskError) else exc
            if isinstance(cause, InferlabError):
                raise TuneError(f"{what}: {cause}") from None
            first = str(cause).strip().splitlines()[0] if str(cause).strip() else repr(cause)
            raise TuneError(f"{what}: a tuning actor failed ({first})") from None
        if self.progress:
            spread = ", ".join(f"#{a}: {n}" for a, n in sorted(self.per_actor.items()))
            self.progress(
                f"{what}: {len(items)} item(s) done; so far on {len(self.per_actor)} "
                f"actor(s) ({spread})"
            )
        return out

    def screen(self, items: list[ScreenItem], what: str) -> None:
        for item, (timed, failed) in self.round(what, list(items)):
            key = (item.n, item.k, item.m)
            self.screened.setdefault(key, []).extend(timed)
            self.failed[key] = self.failed.get(key, 0) + failed


def _compile(
    search: _Search,
    shapes: list[tuple[int, int]],
    ms: list[int],
    cands: Callable[[int, int, int], list[KernelConfig]],
    default: KernelConfig,
    workers: int,
) -> tuple[float, int, dict[tuple[KernelConfig, tuple[bool, ...]], str]]:
    """The compile round: (seconds, distinct binaries, {(binary, class): error})."""
    from inferlab.tune.runner import binary_rep

    t0 = time.perf_counter()
    specs: dict[tuple[KernelConfig, tuple[bool, ...]], Spec] = {}
    for n, k in shapes:
        for m in ms:
            for c in [*cands(m, n, k), default]:
                rep = binary_rep(c)
                specs.setdefault((rep, spec_class(n, k)), (rep, n, k))
    items = [CompileItem(ch, workers) for ch in _chunks(list(specs.values()), COMPILE_CHUNK)]
    bad: dict[tuple[KernelConfig, tuple[bool, ...]], str] = {}
    for _, failures in search.round(f"compile {len(specs)} binaries", items):
        for (c, n, k), err in failures:
            bad[(c, spec_class(n, k))] = err
    return time.perf_counter() - t0, len(specs), bad


def _default_candidates() -> Callable[..., list[KernelConfig]]:
    from inferlab.tune.space import candidates

    return candidates


def _identities(ray: Any, handles: list[Any]) -> list[dict[str, Any]]:
    """Every actor's GPU; GPUs of several models are refused (engine files are per model)."""
    idents: list[dict[str, Any]] = ray.get([h.identity.remote() for h in handles])
    names = sorted({str(i["gpu_name"]) for i in idents})
    if len(names) > 1:
        raise TuneError(
            f"tune --ray: the cluster's GPUs are of several models ({', '.join(names)}); the "
            "engines read one file per GPU model: tune each model on a cluster of its own"
        )
    return idents


def _compile_workers(nodes: Sequence[Any]) -> int:
    """Compile processes per actor: a GPU's share of its node's CPUs, one kept free."""
    shares = [n.cpus / n.gpus for n in nodes if n.gpus]
    return max(1, int(min(shares)) - 1) if shares else 1


def tune_shapes_ray(
    shapes: Sequence[tuple[int, int]],
    batch_sizes: Sequence[int],
    *,
    address: str,
    split_k: bool = True,
    default: KernelConfig = DEFAULT_SGLANG,
    progress: Callable[[str], None] | None = None,
    candidates_fn: Callable[..., list[KernelConfig]] | None = None,
    work: Callable[[], TuneWork] = GpuWork,
    actors: int | None = None,
    chunk: int = CHUNK,
) -> TuneRun:
    """Tune every (N, K) at every M on the GPUs of the Ray cluster at ``address`` (one actor
    per GPU, or ``actors``); see the module docstring. ``TuneError`` when the cluster has no
    GPU, GPUs of several models, a cell with no correct config, or a failed actor."""
    t_start = time.perf_counter()
    shapes = list(dict.fromkeys((int(n), int(k)) for n, k in shapes))
    if not shapes:
        raise TuneError("no shapes to tune")
    plan = plan_batch_sizes(batch_sizes)
    ray = connect(address)
    from ray.util import ActorPool

    nodes = alive_nodes(ray)
    gpus = int(sum(n.gpus for n in nodes))
    count = actors or gpus
    if count < 1 or count > gpus:
        raise TuneError(
            f"tune --ray: {count or 'one'} actor(s) need as many GPUs; the cluster at "
            f"{address} has {gpus}"
        )
    handles = [
        ray.remote(TuneActor).options(num_gpus=1, num_cpus=1).remote(i, work) for i in range(count)
    ]
    try:
        idents = _identities(ray, handles)
        search = _Search(ray, ActorPool(handles), progress)
        cand_fn = candidates_fn or _default_candidates()
        results, compiled = _search(
            search, shapes, plan, cand_fn, split_k, default, chunk, _compile_workers(nodes)
        )
        merged = merge_results([results], shapes, batch_sizes)
    finally:
        for h in handles:
            ray.kill(h)
    compile_s, binaries, bad = compiled
    return TuneRun(
        device_name=engine_device_name(str(idents[0]["gpu_name"])),
        devices=count,
        ceilings=dict(idents[0]["ceilings"]),
        results=merged,
        wall_s=time.perf_counter() - t_start,
        compile_s=compile_s,
        binaries=binaries,
        compile_failed=sorted(f"{c.key} {cls}: {e}" for (c, cls), e in bad.items()),
    )


def _search(
    search: _Search,
    shapes: list[tuple[int, int]],
    plan: list[MPlan],
    cand_fn: Callable[..., list[KernelConfig]],
    split_k: bool,
    default: KernelConfig,
    chunk: int,
    workers: int,
) -> tuple[list[CellResult], tuple[float, int, dict[tuple[KernelConfig, tuple[bool, ...]], str]]]:
    """The rounds: compile, screen anchors, screen neighbours, re-time and check every cell."""
    from inferlab.tune.runner import binary_rep

    ms = tuple(p.m for p in plan)
    compiled = _compile(
        search,
        shapes,
        list(ms),
        lambda m, n, k: cand_fn(m, n, k, split_k=split_k),
        default,
        workers,
    )
    bad = compiled[2]

    def cands(n: int, k: int, m: int) -> list[KernelConfig]:
        cls = spec_class(n, k)
        return [c for c in cand_fn(m, n, k, split_k=split_k) if (binary_rep(c), cls) not in bad]

    anchors = [p for p in plan if not p.sources]
    items = [
        ScreenItem(n, k, p.m, ms, ch)
        for n, k in shapes
        for p in anchors
        for ch in _chunks(cands(n, k, p.m), chunk)
    ]
    search.screen(items, "screen anchors")
    finish: list[FinishItem] = []
    items = []
    for n, k in shapes:
        tops = {p.m: leaders(search.screened.get((n, k, p.m), [])) for p in anchors}
        for p in plan:
            every = cands(n, k, p.m)
            use, source = cell_candidates(every, p, tops)
            if p.sources:
                items += [ScreenItem(n, k, p.m, ms, ch) for ch in _chunks(use, chunk)]
            finish.append(
                FinishItem(n, k, p.m, ms, (), len(every), source, default, 0, default not in use)
            )
    search.screen(items, "screen neighbours")
    return _finish(search, finish), compiled


def _finish(search: _Search, finish: list[FinishItem]) -> list[CellResult]:
    """Every cell re-timed and checked, with its merged screen and failure count."""
    merged = [
        replace(
            f,
            screened=tuple(search.screened.get((f.n, f.k, f.m), [])),
            failed=search.failed.get((f.n, f.k, f.m), 0),
        )
        for f in finish
    ]
    results: list[CellResult] = [r for _, r in search.round("re-time and check", merged)]
    if search.progress:
        for r in sorted(results, key=lambda c: (c.n, c.k, c.m)):
            search.progress(
                f"N={r.n} K={r.k} M={r.m}: default {r.default_us:.1f} µs → {r.best_engine.key} "
                f"{r.best_engine_us:.1f} µs ({r.speedup:.2f}×) on {r.gpu_name} ({r.source})"
            )
    return results
