"""CPU mode: where the worker thread's step time goes, for traces without GPU activity.

A CPU engine's trace (vLLM's CPU build records CPU activity only) has no kernels, but its CPU
operators carry the model's work. Definitions (µs):

* step ranges: the engine's own annotations (:data:`STEP_FORMS`): vLLM's
  ``execute_context_<n>(<tokens>)_generation_<m>(<tokens>)`` (decode when no context request
  is in it), ``execute_model``/``model_forward``, or any range matching decode/prefill; the
  worker thread is the one holding most of them;
* a step (an *iteration*) runs from the start of one step range to the start of the next, so
  it holds the forward, the sampling after it and the wait for the next batch; the last range,
  whose iteration the trace does not close, is dropped (a lone range ends at its last op);
* every op of the worker thread that starts in a step adds its *self* time (its duration minus
  its children's) to a category: that of its outermost enclosing op that has one (so
  ``aten::empty`` inside attention is attention, and an op's whole time goes to the category of
  the outermost op that names it), else its own, else ``other``;
* ``framework (in step, no op)``: time inside the step range covered by no op (Python,
  scheduling glue); ``waiting (between steps)``: the rest of the iteration covered by no op;
* so the categories sum to the step time, and shares are of the step time; *busy* is the time
  covered by ops.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from inferlab.errors import ConfigError, TraceError
from inferlab.store.models import ProfileRow, ProfileStep

from .bounds import cpu_verdict, make_row
from .categories import OTHER, Categorizer
from .cpurules import CPU_RULES, FRAMEWORK, WAITING
from .result import Profile
from .steps import make_step, pattern_for
from .trace import CpuOps, GpuRange, Trace

__all__ = ["STEP_FORMS", "analyze_cpu"]

_VLLM = re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)")
#: (pattern, how to tell the phase): the engines' step annotations, first match wins
STEP_FORMS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_VLLM, "vllm-counts"),
    (re.compile(r"execute_model|model_forward", re.IGNORECASE), "unknown"),
    (re.compile(r"decode|prefill|extend", re.IGNORECASE), "by-name"),
)


@dataclass
class _Iteration:
    name: str
    start: float
    end: float  # the next step range's start
    range_end: float  # the step range's own end


def _phase(name: str, how: str) -> str:
    """ "decode" | "prefill" | "unknown" for a step range's name."""
    if how == "vllm-counts":
        m = _VLLM.match(name)
        assert m is not None
        return "prefill" if int(m.group(1)) > 0 else "decode"
    if how == "by-name":
        return "decode" if re.search("decode", name, re.IGNORECASE) else "prefill"
    return "unknown"


def _iterations(
    cpu: CpuOps, path: str, segment: str, pattern: str | None
) -> tuple[list[_Iteration], int, str, list[str]]:
    """The segment's iterations on the worker thread, its tid, the step source, warnings."""
    warnings: list[str] = []
    if pattern is not None:
        rx = pattern_for(segment, pattern)
        found = [r for r in cpu.ranges if rx.search(r.name)]
        how, src = "user", f"annotations matching {pattern!r}"
    else:
        found, how, src = [], "", ""
        for form, h in STEP_FORMS:
            found = [r for r in cpu.ranges if form.search(r.name)]
            if found:
                how, src = h, f"annotations matching {form.pattern!r}"
                break
    if not found:
        names = sorted({r.name for r in cpu.ranges})
        listed = (", ".join(names[:12]) + (" …" if len(names) > 12 else "")) or "none"
        if pattern is not None:
            raise ConfigError(
                f"--steps {pattern!r}: no annotation of {path} matches; its annotations are: "
                + listed
            )
        raise TraceError(
            f"{path}: CPU mode: no step annotation (vLLM's execute_context_..., execute_model, "
            f"model_forward, or a decode/prefill range); its annotations are: {listed} "
            "(pass --steps PATTERN)"
        )
    tids = [r.tid for r in found]
    tid = max(set(tids), key=tids.count)
    own = sorted((r for r in found if r.tid == tid), key=lambda r: r.start)
    its = _spans(own, cpu, tid)
    keep = [
        (it, r)
        for it, r in zip(its, own)
        if segment == "all" or how == "user" or (_phase(r.name, how) in (segment, "unknown"))
    ]
    if how == "unknown" and segment != "all":
        warnings.append(
            f"the step annotations ({own[0].name!r}) do not say prefill or decode: every "
            f"step counts as {segment}"
        )
    return [it for it, _ in keep], tid, src + ", each to the next one's start", warnings


def _spans(own: list[GpuRange], cpu: CpuOps, tid: int) -> list[_Iteration]:
    if len(own) == 1:
        r = own[0]
        mine = (cpu.tid == tid) & (cpu.start >= r.start)
        end = float((cpu.start + cpu.dur)[mine].max()) if mine.any() else r.end
        return [_Iteration(r.name, r.start, max(end, r.end), r.end)]
    return [
        _Iteration(a.name, a.start, b.start, min(a.end, b.start))
        for a, b in itertools.pairwise(own)
    ]


def _self_times(
    cpu: CpuOps, order: np.ndarray, cat: Categorizer
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Per op (in ``order``): self time (µs), effective category, and whether it is top-level."""
    start, dur = cpu.start[order], cpu.dur[order]
    end = start + dur
    n = order.size
    self_t = dur.copy()
    top = np.zeros(n, dtype=bool)
    cats: list[str] = [OTHER] * n
    stack: list[int] = []
    for i in range(n):
        while stack and start[i] >= end[stack[-1]]:
            stack.pop()
        own = cat(cpu.names[cpu.name_id[order[i]]])
        if stack:
            parent = stack[-1]
            self_t[parent] -= dur[i]
            cats[i] = cats[parent] if cats[parent] != OTHER else own
        else:
            top[i] = True
            cats[i] = own
        stack.append(i)
    return np.maximum(self_t, 0.0), cats, top


def analyze_cpu(
    tr: Trace, *, segment: str, steps_pattern: str | None, categorizer: Categorizer | None
) -> Profile:
    """CPU mode (see the module docstring); the result has ``mode == "cpu"``."""
    cpu = tr.cpu
    assert cpu is not None
    cat = (categorizer or Categorizer()).with_builtin(CPU_RULES)
    its, tid, source, warnings = _iterations(cpu, tr.path, segment, steps_pattern)
    if not its:
        raise TraceError(f"{tr.path}: CPU mode: no {segment} steps found")
    mine = np.flatnonzero(cpu.tid == tid)
    order = mine[np.lexsort((-cpu.dur[mine], cpu.start[mine]))]
    self_t, cats, top = _self_times(cpu, order, cat)
    start, dur = cpu.start[order], cpu.dur[order]
    steps, in_seg, framework = _attribute(its, start, dur, top)
    span = sum(s.span_us for s in steps)
    busy = sum(s.busy_us for s in steps)
    n = len(steps)

    def row(name: str, c: str, t: float, k: int, short: str = "") -> ProfileRow:
        return make_row(name, c, t, k, span_us=span, share_base_us=span, n_steps=n, short=short)

    rows, op_rows, unknown = _tally(cpu, order, in_seg, self_t, cats, cat, row)
    rows += [
        row(FRAMEWORK, FRAMEWORK, framework, n),
        row(WAITING, WAITING, span - busy - framework, n),
    ]
    rows.sort(key=lambda r: -r.time_us)
    mean_busy, mean_span = busy / n, span / n
    return Profile(
        trace=tr.path,
        format=tr.format,
        segment=segment,
        step_source=source,
        device="CPU",
        sm_count=None,
        steps=steps,
        span_us=span,
        busy_us=busy,
        kernel_us=float(self_t[in_seg].sum()),
        kernels=int(in_seg.sum()),
        kernel_names=len(op_rows),
        copy_us=0.0,
        copies=0,
        categories=rows,
        kernel_rows=op_rows,
        unknown=unknown,
        occupancy=[],
        occupancy_share=None,
        graph_launches=0,
        graph_kernels=0,
        verdict=cpu_verdict(mean_busy, mean_span, segment),
        warnings=[*tr.warnings, *warnings],
        mode="cpu",
        share_of="step time",
        meta={**tr.meta, "worker_tid": tid},
    )


def _tally(
    cpu: CpuOps,
    order: np.ndarray,
    in_seg: np.ndarray,
    self_t: np.ndarray,
    cats: list[str],
    cat: Categorizer,
    row: Callable[..., ProfileRow],
) -> tuple[list[ProfileRow], list[ProfileRow], list[str]]:
    """Category rows, op rows (every name, by self time) and the names no rule matches."""
    cat_t: dict[str, float] = {}
    cat_n: dict[str, int] = {}
    op_t: dict[int, float] = {}
    op_n: dict[int, int] = {}
    for i in np.flatnonzero(in_seg):
        c, nid = cats[i], int(cpu.name_id[order[i]])
        cat_t[c] = cat_t.get(c, 0.0) + float(self_t[i])
        cat_n[c] = cat_n.get(c, 0) + 1
        op_t[nid] = op_t.get(nid, 0.0) + float(self_t[i])
        op_n[nid] = op_n.get(nid, 0) + 1
    rows = [row(c, c, cat_t[c], cat_n[c]) for c in cat.order() if c in cat_t]
    ranked = sorted(op_t, key=lambda k: -op_t[k])
    names = cpu.names
    op_rows = [row(names[k], cat(names[k]), op_t[k], op_n[k], names[k]) for k in ranked]
    return rows, op_rows, [names[k] for k in ranked if cat(names[k]) == OTHER]


def _attribute(
    its: list[_Iteration], start: np.ndarray, dur: np.ndarray, top: np.ndarray
) -> tuple[list[ProfileStep], np.ndarray, float]:
    """Steps (busy = top-level op time), ops in the segment, framework time (µs)."""
    steps: list[ProfileStep] = []
    in_seg = np.zeros(start.size, dtype=bool)
    framework = 0.0
    for it in its:
        a = int(np.searchsorted(start, it.start, "left"))
        b = int(np.searchsorted(start, it.end, "left"))
        in_seg[a:b] = True
        t = np.flatnonzero(top[a:b]) + a
        busy = float(dur[t].sum())
        # top-level op time inside the step range, clipped to it
        inside = np.clip(np.minimum(start[t] + dur[t], it.range_end) - start[t], 0.0, None)
        framework += max((it.range_end - it.start) - float(inside.sum()), 0.0)
        steps.append(make_step(it.name, it.start, it.end, busy, b - a, busy))
    return steps, in_seg, framework
