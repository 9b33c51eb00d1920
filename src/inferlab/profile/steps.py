"""Step detection on the GPU row: named ranges, projected host ranges, or idle gaps (µs).

A step is a named range on the GPU row (``gpu_user_annotation``, or an NVTX/CPU range projected
to the GPU through the correlation of the launches inside it), or, without annotations, a run of
GPU activity separated from the next by an idle gap. Patterns are case-insensitive, so SGLang's
``step[DECODE bs=16]`` spans match ``decode`` like ``decode_step_3`` does.
"""

from __future__ import annotations

import re

import numpy as np

from inferlab.errors import ConfigError
from inferlab.store.models import ProfileStep

from .trace import GpuRange, Trace

__all__ = [
    "DEFAULT_PATTERNS",
    "VLLM_PATTERNS",
    "find_steps",
    "gap_steps",
    "make_step",
    "pattern_for",
    "step_batch",
    "step_patterns",
    "union_us",
]

#: segment → step-name pattern (``re.search``, case-insensitive). SGLang names its prefill
#: spans ``step[EXTEND ...]``; vLLM (0.26, 0.32) names each engine step
#: ``execute_context_<n>(<tokens>)_generation_<m>(<tokens>)``: a decode step schedules no
#: prompt (n = 0), a step with prompts (chunked prefill mixes both) counts as prefill.
DEFAULT_PATTERNS = {"decode": r"decode", "prefill": r"prefill|extend"}
ALL_PATTERN = r"decode|prefill|extend"
#: tried when no range matches the default pattern: vLLM's own step names
VLLM_PATTERNS = {
    "decode": r"execute_context_0\(0\)_generation_[1-9]",
    "prefill": r"execute_context_[1-9]",
    "all": r"execute_context_",
}
#: the batch a step name states: SGLang ``step[DECODE bs=16]``, vLLM
#: ``execute_context_<n>(<tokens>)_generation_<m>(<tokens>)`` (n + m requests)
_BATCH = (
    re.compile(r"\bbs=(\d+)"),
    re.compile(r"execute_context_(\d+)\(\d+\)_generation_(\d+)\("),
)


def step_batch(name: str) -> int | None:
    """Sequences in a step, when its name says (None otherwise)."""
    for rx in _BATCH:
        m = rx.search(name)
        if m is not None:
            return sum(int(g) for g in m.groups())
    return None


def make_step(
    name: str, start_us: float, end_us: float, busy_us: float, kernels: int, kernel_us: float
) -> ProfileStep:
    """The step [``start_us``, ``end_us``) busy for ``busy_us``: its idle rest and, when its
    name says, its batch (``step_batch``)."""
    span = end_us - start_us
    return ProfileStep(
        name=name,
        start_us=start_us,
        span_us=span,
        busy_us=busy_us,
        idle_us=max(span - busy_us, 0.0),
        kernels=kernels,
        kernel_us=kernel_us,
        batch=step_batch(name),
    )


def union_us(start: np.ndarray, end: np.ndarray) -> float:
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


def pattern_for(segment: str, pattern: str | None) -> re.Pattern[str]:
    """The compiled step pattern of ``segment`` (or the user's ``--steps``)."""
    pat = pattern or DEFAULT_PATTERNS.get(segment) or ALL_PATTERN
    try:
        return re.compile(pat, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"--steps: bad regular expression {pat!r}: {exc}") from None


def _project(tr: Trace, r: GpuRange) -> GpuRange | None:
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


def step_patterns(segment: str, pattern: str | None) -> list[re.Pattern[str]]:
    """The step-name patterns tried, in order: the user's (or the segment's default), then
    vLLM's own step names when the user gave none."""
    rxs = [pattern_for(segment, pattern)]
    if pattern is None:
        rxs.append(re.compile(VLLM_PATTERNS.get(segment, VLLM_PATTERNS["all"]), re.IGNORECASE))
    return rxs


def find_steps(
    tr: Trace, segment: str, pattern: str | None, gap_us: float | None
) -> tuple[list[GpuRange], str]:
    """The segment's steps, sorted, and a sentence saying where they came from."""
    rxs = step_patterns(segment, pattern)
    for rx in rxs:
        found = _named_steps(tr, rx)
        if found is not None:
            return found
    if pattern is not None:
        names = sorted({r.name for r in tr.ranges})
        if names:
            raise ConfigError(
                f"--steps {rxs[0].pattern!r}: no range of {tr.path} matches; its ranges are: "
                + ", ".join(names[:12])
                + (" …" if len(names) > 12 else "")
            )
    return gap_steps(tr, gap_us), "idle gaps"


def _named_steps(tr: Trace, rx: re.Pattern[str]) -> tuple[list[GpuRange], str] | None:
    """Steps from the ranges ``rx`` names: on the GPU row, or host ranges projected to it."""
    pat = rx.pattern
    gpu = [r for r in tr.ranges if r.where == "gpu" and rx.search(r.name)]
    if gpu:
        src = "GPU annotations" if tr.format == "kineto" else "NVTX ranges"
        return sorted(gpu, key=lambda r: r.start), f"{src} matching {pat!r}"
    cpu = [r for r in tr.ranges if r.where == "cpu" and rx.search(r.name)]
    if cpu:
        proj = [p for r in cpu if (p := _project(tr, r)) is not None]
        if proj:
            what = "user annotations" if tr.format == "kineto" else "NVTX ranges"
            return sorted(proj, key=lambda r: r.start), (
                f"{what} matching {pat!r}, projected to the GPU by correlation"
            )
    return None


def gap_steps(tr: Trace, gap_us: float | None) -> list[GpuRange]:
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
