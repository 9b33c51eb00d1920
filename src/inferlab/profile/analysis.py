"""Where the GPU time goes: steps, categories, kernels, occupancy, Amdahl bounds, diffs.

Definitions (all times µs in the data, ms in sentences):

* step: a named range on the GPU row (``gpu_user_annotation``, or an NVTX/CPU range projected to
  the GPU through the correlation of the launches inside it), or, without annotations, a run of
  GPU activity separated from the next by an idle gap; its *span* is the range's GPU duration;
* an op belongs to a step when it starts inside the span;
* *busy*: the length of the union of the step's kernel intervals (overlap counted once);
  *idle* = span − busy;
* *kernel time*: the sum of kernel durations (overlapping kernels each count); a *share* is of
  the segment's kernel time; memcpy/memset time is reported beside it, not in it;
* Amdahl: with ``f`` = time / span of the segment (the step time the thing can remove at most),
  the whole step speeds up at most ``1 / (1 − f + f/k)`` if it becomes k× faster and
  ``1 / (1 − f)`` if it vanished;
* occupancy: a kernel whose grid has fewer blocks than the GPU has SMs keeps at most
  ``blocks / SMs`` of the SMs busy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from inferlab.errors import ConfigError, TraceError

from .categories import MEMCPY, Categorizer, short_name
from .trace import KIND_KERNEL, GpuRange, Trace

__all__ = [
    "DEFAULT_PATTERNS",
    "Profile",
    "ProfileDiff",
    "analyze",
    "diff_profiles",
]

VERSION = 1
DEFAULT_PATTERNS = {"decode": r"decode", "prefill": r"prefill"}
GRAPH_LAUNCH = re.compile(r"cudaGraphLaunch|cuGraphLaunch")
HOST_BOUND, PARTLY = 0.6, 0.85


@dataclass
class Step:
    name: str
    start_us: float
    span_us: float
    busy_us: float
    idle_us: float
    kernels: int
    kernel_us: float


@dataclass
class Row:
    """A category or a kernel: time (µs), share of kernel time, count, mean (µs)."""

    name: str
    category: str
    time_us: float
    share: float | None  # of kernel time; None for memcpy/memset (not kernel time)
    count: int
    mean_us: float
    per_step_us: float | None
    amdahl_2x: float
    amdahl_free: float
    short: str = ""


@dataclass
class Occupancy:
    name: str
    short: str
    blocks: int
    sm_fraction: float
    time_us: float
    share: float
    count: int


@dataclass
class Profile:
    """The analysis of one segment of one trace. ``to_dict`` is what is stored and printed."""

    trace: str
    format: str
    segment: str
    step_source: str
    device: str | None
    sm_count: int | None
    steps: list[Step]
    span_us: float
    busy_us: float
    kernel_us: float
    kernels: int
    kernel_names: int
    copy_us: float
    copies: int
    categories: list[Row]
    kernel_rows: list[Row]  # every kernel name, by time
    unknown: list[str]
    occupancy: list[Occupancy]
    occupancy_share: float | None
    graph_launches: int
    graph_kernels: int
    verdict: str
    warnings: list[str] = field(default_factory=list)
    version: int = VERSION

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def mean_step(self) -> dict[str, float] | None:
        """Mean span, busy, idle (µs) and kernels per step; ``None`` without steps."""
        if not self.steps:
            return None
        n = len(self.steps)
        return {
            "span_us": sum(s.span_us for s in self.steps) / n,
            "busy_us": sum(s.busy_us for s in self.steps) / n,
            "idle_us": sum(s.idle_us for s in self.steps) / n,
            "kernels": sum(s.kernels for s in self.steps) / n,
            "min_span_us": min(s.span_us for s in self.steps),
            "max_span_us": max(s.span_us for s in self.steps),
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: an infinite bound (a thing that is the whole step) becomes ``None``."""
        d = asdict(self)
        d["mean_step"] = self.mean_step()
        out: dict[str, Any] = _finite(d)
        return out


def _finite(x: Any) -> Any:
    if isinstance(x, float):
        return x if np.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def _union(start: np.ndarray, end: np.ndarray) -> float:
    """Length of the union of intervals (µs); inputs sorted by start."""
    if start.size == 0:
        return 0.0
    top = np.maximum.accumulate(end)
    new = np.empty(start.size, dtype=bool)
    new[0] = True
    new[1:] = start[1:] > top[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:], start.size) - 1
    return float((top[last] - start[first]).sum())


def _ms(us: float) -> str:
    ms = us / 1000
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}"


def _project(tr: Trace, r: GpuRange, order: np.ndarray) -> GpuRange | None:
    """A host range's GPU extent: the ops whose launch (same correlation) lies inside it."""
    inside = (tr.launch_start >= r.start) & (tr.launch_start <= r.end)
    corrs = np.unique(tr.launch_corr[inside])
    corrs = corrs[corrs >= 0]
    if corrs.size == 0:
        return None
    sel = np.isin(tr.corr, corrs)
    if not sel.any():
        return None
    return GpuRange(
        r.name, float(tr.start[sel].min()), float((tr.start + tr.dur)[sel].max()), "gpu"
    )


def _find_steps(
    tr: Trace, segment: str, pattern: str | None, gap_us: float | None
) -> tuple[list[GpuRange], str]:
    pat = pattern or DEFAULT_PATTERNS.get(segment)
    if segment == "all" and pattern is None:
        pat = r"decode|prefill"
    assert pat is not None
    try:
        rx = re.compile(pat)
    except re.error as exc:
        raise ConfigError(f"--steps: bad regular expression {pat!r}: {exc}") from None
    gpu = [r for r in tr.ranges if r.where == "gpu" and rx.search(r.name)]
    if gpu:
        src = "GPU annotations" if tr.format == "kineto" else "NVTX ranges"
        return sorted(gpu, key=lambda r: r.start), f"{src} matching {pat!r}"
    cpu = [r for r in tr.ranges if r.where == "cpu" and rx.search(r.name)]
    if cpu:
        order = np.argsort(tr.start, kind="stable")
        proj = [p for r in cpu if (p := _project(tr, r, order)) is not None]
        if proj:
            what = "user annotations" if tr.format == "kineto" else "NVTX ranges"
            return sorted(proj, key=lambda r: r.start), (
                f"{what} matching {pat!r}, projected to the GPU by correlation"
            )
    if pattern is not None:
        names = sorted({r.name for r in tr.ranges})
        if names:
            raise ConfigError(
                f"--steps {pat!r}: no range of {tr.path} matches; its ranges are: "
                + ", ".join(names[:12])
                + (" …" if len(names) > 12 else "")
            )
    return _gap_steps(tr, gap_us), "idle gaps"


def _gap_steps(tr: Trace, gap_us: float | None) -> list[GpuRange]:
    """Steps split at GPU idle gaps longer than ``gap_us`` (default: 10× the median gap, at
    least 200 µs)."""
    if tr.n_ops == 0:
        return []
    order = np.argsort(tr.start, kind="stable")
    s, e = tr.start[order], (tr.start + tr.dur)[order]
    top = np.maximum.accumulate(e)
    gaps = s[1:] - top[:-1]
    if gap_us is None:
        pos = gaps[gaps > 0]
        gap_us = max(200.0, 10 * float(np.median(pos))) if pos.size else 200.0
    cut = np.flatnonzero(gaps > gap_us) + 1
    firsts = np.concatenate([[0], cut])
    lasts = np.concatenate([cut, [s.size]]) - 1
    return [
        GpuRange(f"step_{i}", float(s[a]), float(top[b]), "gpu")
        for i, (a, b) in enumerate(zip(firsts, lasts))
    ]


def _verdict(segment: str, mean: dict[str, float] | None, graphs: int) -> str:
    if mean is None or mean["span_us"] <= 0:
        return "no steps: no per-step verdict"
    busy, span = mean["busy_us"], mean["span_us"]
    frac = busy / span
    head = f"kernels busy {_ms(busy)} of {_ms(span)} ms per {segment} step ({frac:.0%})"
    if frac < HOST_BOUND:
        if graphs:
            return (
                f"{head}: host-bound even with CUDA graphs; the GPU waits on the CPU between "
                "replays (scheduling, sampling, synchronization)"
            )
        return f"{head}: launch-bound; CUDA graphs would help"
    if frac < PARTLY:
        return f"{head}: partly host-bound; launch gaps cost {1 - frac:.0%} of the step"
    return f"{head}: GPU-bound; only faster kernels shorten the step (see the Amdahl bounds)"


def amdahl(f: float, k: float) -> float:
    """Whole-step speed-up bound when a fraction ``f`` of it becomes ``k``× faster
    (``k = inf``: vanishes)."""
    f = min(max(f, 0.0), 1.0)
    rest = 1 - f + (0.0 if k == float("inf") else f / k)
    return float("inf") if rest <= 0 else 1 / rest


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
    if segment not in ("decode", "prefill", "all"):
        raise ConfigError(f"--segment: expected decode, prefill or all, got {segment!r}")
    if tr.n_ops == 0:
        raise TraceError(
            f"{tr.path}: no GPU activity (no kernel, memcpy or memset events): a CPU-only "
            "profile? Record with ProfilerActivity.CUDA (torch) or --trace=cuda (nsys)"
        )
    cat = categorizer or Categorizer()
    warnings = list(tr.warnings)
    sm = sms or tr.sm_count
    order = np.argsort(tr.start, kind="stable")
    start, dur = tr.start[order], tr.dur[order]
    kind, name_id, blocks, corr = (
        tr.kind[order],
        tr.name_id[order],
        tr.blocks[order],
        tr.corr[order],
    )
    end = start + dur

    ranges, source = _find_steps(tr, segment, steps_pattern, gap_us)
    if source == "idle gaps" and segment != "all":
        warnings.append(
            f"no range matches the {segment} pattern: steps were cut at idle gaps, so prefill "
            "and decode cannot be told apart (use --steps PATTERN, or annotate the steps)"
        )
    steps: list[Step] = []
    sel = np.zeros(start.size, dtype=bool)
    for r in ranges:
        a, b = np.searchsorted(start, r.start, "left"), np.searchsorted(start, r.end, "left")
        k = np.flatnonzero(kind[a:b] == KIND_KERNEL) + a
        busy = _union(start[k], end[k])
        span = r.end - r.start
        steps.append(
            Step(
                r.name, r.start, span, busy, max(span - busy, 0.0), int(k.size), float(dur[k].sum())
            )
        )
        sel[a:b] = True
    if segment == "all":
        sel[:] = True
        span_total = float(end.max() - start.min())
        busy_total = _union(start[kind == KIND_KERNEL], end[kind == KIND_KERNEL])
    else:
        if not steps:
            raise TraceError(f"{tr.path}: no {segment} steps found")
        span_total = sum(s.span_us for s in steps)
        busy_total = sum(s.busy_us for s in steps)
    n_steps = len(steps) if segment != "all" else 0

    is_k = sel & (kind == KIND_KERNEL)
    is_c = sel & (kind != KIND_KERNEL)
    k_ids, k_dur = name_id[is_k], dur[is_k]
    kernel_us = float(k_dur.sum())
    n_names = len(tr.names)
    t_by = np.bincount(k_ids, weights=k_dur, minlength=n_names)
    n_by = np.bincount(k_ids, minlength=n_names)
    cats = [cat(n) for n in tr.names]

    def row(nm: str, c: str, t: float, n: int, short: str = "") -> Row:
        f = t / span_total if span_total > 0 else 0.0
        return Row(
            name=nm,
            category=c,
            time_us=t,
            share=t / kernel_us if kernel_us > 0 else 0.0,
            count=n,
            mean_us=t / n if n else 0.0,
            per_step_us=t / n_steps if n_steps else None,
            amdahl_2x=amdahl(f, 2),
            amdahl_free=amdahl(f, float("inf")),
            short=short,
        )

    cat_t: dict[str, float] = {}
    cat_n: dict[str, int] = {}
    for i in np.flatnonzero(n_by):
        c = cats[i]
        cat_t[c] = cat_t.get(c, 0.0) + float(t_by[i])
        cat_n[c] = cat_n.get(c, 0) + int(n_by[i])
    cat_rows = [row(c, c, cat_t[c], cat_n[c]) for c in cat.order() if c in cat_t]
    cat_rows.sort(key=lambda r: -r.time_us)
    used = np.flatnonzero(n_by)
    ranked = used[np.argsort(-t_by[used], kind="stable")]
    kernel_rows = [
        row(tr.names[i], cats[i], float(t_by[i]), int(n_by[i]), short_name(tr.names[i]))
        for i in ranked
    ]
    unknown = [tr.names[i] for i in ranked if cats[i] == "other"]

    occ: list[Occupancy] = []
    occ_share: float | None = None
    if sm:
        low = is_k & (blocks > 0) & (blocks < sm)
        if low.any():
            key = name_id[low] * (int(sm) + 1) + blocks[low]
            uk, inv = np.unique(key, return_inverse=True)
            t = np.bincount(inv, weights=dur[low])
            n = np.bincount(inv)
            for j in np.argsort(-t, kind="stable"):
                nid, nblk = divmod(int(uk[j]), int(sm) + 1)
                occ.append(
                    Occupancy(
                        tr.names[nid],
                        short_name(tr.names[nid]),
                        nblk,
                        nblk / sm,
                        float(t[j]),
                        float(t[j]) / kernel_us if kernel_us else 0.0,
                        int(n[j]),
                    )
                )
            occ_share = float(dur[low].sum()) / kernel_us if kernel_us else 0.0
        else:
            occ_share = 0.0
    else:
        warnings.append(
            "SM count unknown (no deviceProperties / TARGET_INFO_GPU): occupancy skipped; "
            "pass --sms N"
        )

    g_ids = [i for i, n in enumerate(tr.launch_names) if GRAPH_LAUNCH.search(n)]
    graph_kernels = graph_launches = 0
    if g_ids:
        gcorr = np.unique(tr.launch_corr[np.isin(tr.launch_name_id, g_ids)])
        kc = corr[is_k]
        in_graph = np.isin(kc, gcorr[gcorr >= 0])
        graph_kernels, graph_launches = int(in_graph.sum()), int(np.unique(kc[in_graph]).size)

    p = Profile(
        trace=tr.path,
        format=tr.format,
        segment=segment,
        step_source=source,
        device=tr.device,
        sm_count=int(sm) if sm else None,
        steps=steps,
        span_us=span_total,
        busy_us=busy_total,
        kernel_us=kernel_us,
        kernels=int(is_k.sum()),
        kernel_names=int(used.size),
        copy_us=float(dur[is_c].sum()),
        copies=int(is_c.sum()),
        categories=cat_rows,
        kernel_rows=kernel_rows,
        unknown=unknown,
        occupancy=occ,
        occupancy_share=occ_share,
        graph_launches=graph_launches,
        graph_kernels=graph_kernels,
        verdict="",
        warnings=warnings,
    )
    if segment == "all":
        whole = {"busy_us": busy_total, "span_us": span_total}
        p.verdict = _verdict("whole-trace", whole, graph_launches).replace(
            "per whole-trace step", "over the whole trace's GPU span"
        )
    else:
        p.verdict = _verdict(segment, p.mean_step(), graph_launches)
    if p.copies:
        p.categories.append(
            Row(
                MEMCPY,
                MEMCPY,
                p.copy_us,
                None,
                p.copies,
                p.copy_us / p.copies,
                p.copy_us / n_steps if n_steps else None,
                amdahl(p.copy_us / span_total if span_total else 0.0, 2),
                amdahl(p.copy_us / span_total if span_total else 0.0, float("inf")),
            )
        )
    return p


# --------------------------------------------------------------------------------- diff


@dataclass
class DiffRow:
    """A category or kernel in two profiles: time per step (µs; per segment without steps)."""

    name: str
    short: str
    a_us: float
    b_us: float
    delta_us: float
    ratio: float | None


@dataclass
class ProfileDiff:
    a: str
    b: str
    unit: str
    span_a_us: float
    span_b_us: float
    categories: list[DiffRow]
    kernels: list[DiffRow]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = _finite(asdict(self))
        return out


def _per(p: Profile) -> float:
    return float(p.n_steps) if p.n_steps and p.segment != "all" else 1.0


def diff_profiles(a: Profile, b: Profile, top: int = 20) -> ProfileDiff:
    """Per-category and per-kernel deltas (B − A), per step when both have steps. Kernels are
    matched by full name (never by correlation: CUDA graph replays share one)."""
    na, nb = _per(a), _per(b)
    unit = "per step" if na > 1 or nb > 1 or (a.n_steps and b.n_steps) else "per segment"
    if unit == "per segment":
        na = nb = 1.0

    def rows(xa: Sequence[Row], xb: Sequence[Row], short: bool) -> list[DiffRow]:
        ta = {r.name: r for r in xa}
        tb = {r.name: r for r in xb}
        out = []
        for n in dict.fromkeys([*ta, *tb]):
            va = ta[n].time_us / na if n in ta else 0.0
            vb = tb[n].time_us / nb if n in tb else 0.0
            s = short_name(n) if short else n
            out.append(DiffRow(n, s, va, vb, vb - va, vb / va if va > 0 else None))
        out.sort(key=lambda r: -abs(r.delta_us))
        return out

    # kernels: all of them, not only each side's top list
    return ProfileDiff(
        a=a.trace,
        b=b.trace,
        unit=unit,
        span_a_us=a.span_us / na,
        span_b_us=b.span_us / nb,
        categories=rows(a.categories, b.categories, False),
        kernels=rows(a.kernel_rows, b.kernel_rows, True)[:top],
    )
