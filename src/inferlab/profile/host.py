"""The host's work per step, read from the CPU side of a GPU trace (µs).

The engine thread is the host thread that carries the step annotations (vLLM's
``execute_context_*`` ranges, SGLang's ``step[...]``). For each of its step ranges that has a
next range on the same thread:

* *loop*: from the range's start to the next top-level range's start (to the next step
  range's where the step ranges are nested in others, as SGLang's are in
  ``scheduler.run_batch``), minus the time spent in blocking CUDA calls (``cuda*Synchronize``,
  a synchronous ``cudaMemcpy``) inside it: the host's whole loop per step as profiled
  (scheduling, input preparation, launches, sampling, output processing). The profiler slows
  the host, so this is the high end of the host's floor;
* *range*: the step range's own span on the host (vLLM: ``execute_model``'s input preparation
  and graph launch), a part of the loop the host cannot skip: the low end;
* *ahead*: the fraction of step ranges that began while the GPU was still running an earlier
  step (the host overlaps the GPU: asynchronous scheduling, or launches queued ahead).

Medians over the steps. A trace without host step ranges (nsys, steps cut at idle gaps) has
no host time (``None``): bounds then stay GPU-only; so has a SIMULATED one (``analysis``), whose
host range is the step by construction.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np

from inferlab.store.models import HostBody

from .trace import GpuRange, Trace

__all__ = ["SYNC", "host_time"]

#: CUDA calls that block the host until the GPU catches up
SYNC = re.compile(r"^(cuda|cu)(Stream|Device|Event|Ctx)Synchronize|^cudaMemcpy(2D)?$")
#: CUDA calls that launch GPU work (a kernel, or a graph replay)
LAUNCH = re.compile(r"LaunchKernel|GraphLaunch|^cuLaunch")


def _top_level(ranges: Sequence[GpuRange]) -> list[GpuRange]:
    """Ranges not nested in an earlier one, by start."""
    out: list[GpuRange] = []
    for r in sorted(ranges, key=lambda r: r.start):
        if not out or r.start >= out[-1].end:
            out.append(r)
    return out


def _in(start: np.ndarray, dur: np.ndarray, sel: np.ndarray, a: float, b: float) -> float:
    """Time (µs) of the selected calls that start in [a, b)."""
    m = sel & (start >= a) & (start < b)
    return float(dur[m].sum())


def host_time(tr: Trace, rx: re.Pattern[str], gpu_steps: Sequence[GpuRange]) -> HostBody | None:
    """The host's time per step of the segment whose host ranges ``rx`` names (µs, medians
    over ``steps`` loops; the stored body's type); None without two such ranges on one thread."""
    mine = [r for r in tr.ranges if r.where == "cpu" and rx.search(r.name)]
    if not mine:
        return None
    tids = [r.tid for r in mine]
    tid = max(set(tids), key=tids.count)
    thread = _top_level([r for r in tr.ranges if r.where == "cpu" and r.tid == tid])
    if not any(rx.search(r.name) for r in thread):
        # the step ranges are nested (SGLang 0.5.17: ``step[DECODE bs=1]`` inside
        # ``scheduler.run_batch``): a loop runs from one step range to the next
        thread = sorted((r for r in mine if r.tid == tid), key=lambda r: r.start)
    names = tr.launch_names
    sync = np.isin(tr.launch_name_id, [i for i, n in enumerate(names) if SYNC.search(n)])
    launch = np.isin(tr.launch_name_id, [i for i, n in enumerate(names) if LAUNCH.search(n)])
    st, du = tr.launch_start, tr.launch_dur
    g0 = np.array([g.start for g in gpu_steps])
    g1 = np.array([g.end for g in gpu_steps])
    loops, spans, waits, launches, ahead = [], [], [], [], []
    for r, nxt in itertools.pairwise(thread):
        if not rx.search(r.name):
            continue
        w = _in(st, du, sync, r.start, nxt.start)
        loops.append(nxt.start - r.start - w)
        spans.append(r.end - r.start)
        waits.append(w)
        launches.append(_in(st, du, launch, r.start, nxt.start))
        ahead.append(bool(((g0 < r.start) & (g1 > r.start)).any()))
    if not loops:
        return None
    return HostBody(
        thread=tid,
        steps=len(loops),
        loop_us=float(np.median(loops)),
        range_us=float(np.median(spans)),
        wait_us=float(np.median(waits)),
        launch_us=float(np.median(launches)),
        ahead=sum(ahead) / len(ahead),
    )
