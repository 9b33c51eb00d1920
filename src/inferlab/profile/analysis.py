"""Where the step time goes: steps, categories, kernels, occupancy, Amdahl bounds.

Definitions (all times µs in the data, ms in sentences):

* step (GPU mode, :mod:`.steps`): a named range on the GPU row, a host range projected to the
  GPU through the correlation of its launches, or a run of GPU activity between idle gaps; its
  *span* is the range's GPU duration; an op belongs to a step when it starts inside the span;
* *busy*: the length of the union of the step's kernel intervals (overlap counted once);
  *idle* = span − busy;
* *kernel time*: the sum of kernel durations (overlapping kernels each count); a *share* is of
  the segment's kernel time; memcpy/memset time is reported beside it, not in it;
* Amdahl (:mod:`.bounds`): with ``f`` = time / span of the segment, the whole step speeds up at
  most ``1 / (1 − f + f/k)`` if the thing becomes k× faster and ``1 / (1 − f)`` if it vanished;
* occupancy (:mod:`.occupancy`): a kernel whose grid has fewer blocks than the GPU has SMs
  keeps at most ``blocks / SMs`` of the SMs busy.

A trace without GPU operations whose CPU ops carry the model's work (vLLM's CPU build) is
analyzed in CPU mode (:mod:`.cpu`): the worker thread's iterations, attributed to CPU ops.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from inferlab.errors import ConfigError, TraceError
from inferlab.store.models import HostBody, OccupancyRow, ProfileRow, ProfileStep

from .bounds import HOST_BOUND, PARTLY, amdahl, gpu_verdict, make_row
from .categories import MEMCPY, Categorizer, short_name
from .diff import DiffRow, ProfileDiff, diff_profiles
from .host import host_time
from .occupancy import occupancy
from .result import Profile
from .steps import DEFAULT_PATTERNS, find_steps, make_step, step_patterns, union_us
from .trace import KIND_KERNEL, GpuRange, Trace

__all__ = [
    "DEFAULT_PATTERNS",
    "HOST_BOUND",
    "PARTLY",
    "DiffRow",
    "Profile",
    "ProfileDiff",
    "amdahl",
    "analyze",
    "diff_profiles",
]

GRAPH_LAUNCH = re.compile(r"cudaGraphLaunch|cuGraphLaunch")
SEGMENTS = ("decode", "prefill", "all")
NO_SM = "SM count unknown (no deviceProperties / TARGET_INFO_GPU): occupancy skipped; pass --sms N"


@dataclass
class _Ops:
    """The trace's GPU operations, sorted by start (parallel arrays, µs)."""

    start: np.ndarray
    dur: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    name_id: np.ndarray
    blocks: np.ndarray
    corr: np.ndarray


def _sorted(tr: Trace) -> _Ops:
    o = np.argsort(tr.start, kind="stable")
    start, dur = tr.start[o], tr.dur[o]
    return _Ops(start, dur, start + dur, tr.kind[o], tr.name_id[o], tr.blocks[o], tr.corr[o])


def analyze(
    tr: Trace,
    *,
    segment: str = "decode",
    steps_pattern: str | None = None,
    sms: int | None = None,
    categorizer: Categorizer | None = None,
    gap_us: float | None = None,
) -> Profile:
    """Analyze one segment (``decode``, ``prefill`` or ``all``) of a trace."""
    if segment not in SEGMENTS:
        raise ConfigError(f"--segment: expected decode, prefill or all, got {segment!r}")
    if tr.n_ops == 0:
        if tr.cpu is not None and tr.cpu.n_ops:
            from .cpu import analyze_cpu

            return analyze_cpu(
                tr, segment=segment, steps_pattern=steps_pattern, categorizer=categorizer
            )
        raise TraceError(
            f"{tr.path}: no GPU activity (no kernel, memcpy or memset events) and no CPU "
            "operators: record with ProfilerActivity.CUDA (torch) or --trace=cuda (nsys), or "
            "ProfilerActivity.CPU for a CPU engine"
        )
    return _analyze_gpu(tr, segment, steps_pattern, sms, categorizer or Categorizer(), gap_us)


def _segment(
    tr: Trace, ops: _Ops, segment: str, pattern: str | None, gap_us: float | None
) -> tuple[list[ProfileStep], np.ndarray, float, float, str, list[str]]:
    """Steps, the ops in the segment, its span and busy time (µs), step source, warnings."""
    warnings: list[str] = []
    ranges, source = find_steps(tr, segment, pattern, gap_us)
    if source == "idle gaps" and segment != "all":
        warnings.append(
            f"no range matches the {segment} pattern: steps were cut at idle gaps, so prefill "
            "and decode cannot be told apart (use --steps PATTERN, or annotate the steps)"
        )
    steps: list[ProfileStep] = []
    sel = np.zeros(ops.start.size, dtype=bool)
    for r in ranges:
        a = np.searchsorted(ops.start, r.start, "left")
        b = np.searchsorted(ops.start, r.end, "left")
        k = np.flatnonzero(ops.kind[a:b] == KIND_KERNEL) + a
        busy = union_us(ops.start[k], ops.end[k])
        kernel_us = float(ops.dur[k].sum())
        steps.append(make_step(r.name, r.start, r.end, busy, int(k.size), kernel_us))
        sel[a:b] = True
    if segment == "all":
        sel[:] = True
        is_k = ops.kind == KIND_KERNEL
        span = float(ops.end.max() - ops.start.min())
        return steps, sel, span, union_us(ops.start[is_k], ops.end[is_k]), source, warnings
    if not steps:
        raise TraceError(f"{tr.path}: no {segment} steps found")
    span = sum(s.span_us for s in steps)
    return steps, sel, span, sum(s.busy_us for s in steps), source, warnings


def _breakdown(
    tr: Trace, ops: _Ops, is_k: np.ndarray, cat: Categorizer, span: float, n_steps: int
) -> tuple[list[ProfileRow], list[ProfileRow], list[str], float]:
    """Category rows, kernel rows (every name, by time), unknown names, kernel time (µs)."""
    k_ids, k_dur = ops.name_id[is_k], ops.dur[is_k]
    kernel_us = float(k_dur.sum())
    n_names = len(tr.names)
    t_by = np.bincount(k_ids, weights=k_dur, minlength=n_names)
    n_by = np.bincount(k_ids, minlength=n_names)
    cats = [cat(n) for n in tr.names]
    cat_t: dict[str, float] = {}
    cat_n: dict[str, int] = {}
    for i in np.flatnonzero(n_by):
        c = cats[i]
        cat_t[c] = cat_t.get(c, 0.0) + float(t_by[i])
        cat_n[c] = cat_n.get(c, 0) + int(n_by[i])

    def row(name: str, c: str, t: float, n: int, short: str = "") -> ProfileRow:
        return make_row(
            name, c, t, n, span_us=span, share_base_us=kernel_us, n_steps=n_steps, short=short
        )

    cat_rows = [row(c, c, cat_t[c], cat_n[c]) for c in cat.order() if c in cat_t]
    cat_rows.sort(key=lambda r: -r.time_us)
    used = np.flatnonzero(n_by)
    ranked = used[np.argsort(-t_by[used], kind="stable")]
    kernel_rows = [
        row(tr.names[i], cats[i], float(t_by[i]), int(n_by[i]), short_name(tr.names[i]))
        for i in ranked
    ]
    unknown = [tr.names[i] for i in ranked if cats[i] == "other"]
    return cat_rows, kernel_rows, unknown, kernel_us


def _graphs(tr: Trace, ops: _Ops, is_k: np.ndarray) -> tuple[int, int]:
    """Kernels replayed from CUDA graphs, and the graph launches they came from."""
    g_ids = [i for i, n in enumerate(tr.launch_names) if GRAPH_LAUNCH.search(n)]
    if not g_ids:
        return 0, 0
    gcorr = np.unique(tr.launch_corr[np.isin(tr.launch_name_id, g_ids)])
    kc = ops.corr[is_k]
    in_graph = np.isin(kc, gcorr[gcorr >= 0])
    return int(in_graph.sum()), int(np.unique(kc[in_graph]).size)


def _host(
    tr: Trace, segment: str, pattern: str | None, steps: list[ProfileStep]
) -> HostBody | None:
    """The engine thread's time per step, from the first step pattern with host ranges; None
    for a SIMULATED trace (the sim has no host model: its host range is the step by design)."""
    if segment == "all" or (tr.meta.get("inferlab") or {}).get("simulated"):
        return None
    gpu = [GpuRange(s.name, s.start_us, s.start_us + s.span_us, "gpu") for s in steps]
    for rx in step_patterns(segment, pattern):
        found = host_time(tr, rx, gpu)
        if found is not None:
            return found
    return None


def _analyze_gpu(
    tr: Trace,
    segment: str,
    pattern: str | None,
    sms: int | None,
    cat: Categorizer,
    gap_us: float | None,
) -> Profile:
    ops = _sorted(tr)
    steps, sel, span, busy, source, warnings = _segment(tr, ops, segment, pattern, gap_us)
    n_steps = len(steps) if segment != "all" else 0
    is_k = sel & (ops.kind == KIND_KERNEL)
    is_c = sel & (ops.kind != KIND_KERNEL)
    cat_rows, kernel_rows, unknown, kernel_us = _breakdown(tr, ops, is_k, cat, span, n_steps)
    sm = sms or tr.sm_count
    occ: tuple[list[OccupancyRow], float | None] = ([], None)
    if sm:
        occ = occupancy(tr.names, ops.name_id, ops.blocks, ops.dur, is_k, sm, kernel_us)
    warnings += [] if sm else [NO_SM]
    graph_kernels, graph_launches = _graphs(tr, ops, is_k)
    copies = int(is_c.sum())
    if copies:
        copy_us = float(ops.dur[is_c].sum())
        cat_rows.append(
            make_row(
                MEMCPY, MEMCPY, copy_us, copies, span_us=span, share_base_us=None, n_steps=n_steps
            )
        )
    p = Profile(
        trace=tr.path,
        format=tr.format,
        segment=segment,
        step_source=source,
        device=tr.device,
        sm_count=int(sm) if sm else None,
        steps=steps,
        span_us=span,
        busy_us=busy,
        kernel_us=kernel_us,
        kernels=int(is_k.sum()),
        kernel_names=len(kernel_rows),
        copy_us=float(ops.dur[is_c].sum()),
        copies=copies,
        categories=cat_rows,
        kernel_rows=kernel_rows,
        unknown=unknown,
        occupancy=occ[0],
        occupancy_share=occ[1],
        graph_launches=graph_launches,
        graph_kernels=graph_kernels,
        verdict="",
        warnings=[*tr.warnings, *warnings],
        meta=dict(tr.meta),
        host=_host(tr, segment, pattern, steps),
    )
    m = p.mean_step() if segment != "all" else {"busy_us": busy, "span_us": span}
    assert m is not None
    per = "over the whole trace's GPU span" if segment == "all" else f"per {segment} step"
    p.verdict = gpu_verdict(m["busy_us"], m["span_us"], graph_launches, per)
    return p
