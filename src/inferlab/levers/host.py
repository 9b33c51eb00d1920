"""A decode step as GPU time and host time with full overlap: the host's floor under kernel
levers.

Model (all per decode step, from one stored profile, µs): ``T`` the step (the profile's mean
GPU span, or the measured TPOT when the profiler slowed it: ``evidence.at_measured_step``),
``G`` the kernels' busy time, ``H`` the host's work (``profile.host``). With the host's work
overlapping the GPU's in full (asynchronous scheduling, launches queued ahead of the GPU), the
step lasts ``max(H, G)`` at least. A kernel lever that makes a fraction ``s`` of the step
``k``× faster leaves ``G' = G − s·T·(1 − 1/k)`` of GPU time, so the step speeds up at most

    ×high = min( 1 / (1 − s + s/k),  T / max(H_low, G') )      (Amdahl, and the host's floor)
    ×low  = max( 1, T / max(H_high, G') )                      (None where it is not below the
                                                                GPU-only bound: no host floor)

``H`` is a band: ``H_high`` is the engine thread's loop per step as profiled (``loop_us``:
one step range to the next, minus blocking waits), ``H_low`` the step range's own span on the
host (``range_us``). The profiler slows the host (vLLM 0.26 on the H200: A's loop read 3.72 ms
profiled where its TPOT measured 2.33 ms), so the host's real floor is taken between them, and
both are capped at ``T``. A profile without host time keeps the GPU-only Amdahl bound."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inferlab.profile.bounds import amdahl

__all__ = ["Floor", "floor_of", "kernel_bound"]


@dataclass(frozen=True)
class Floor:
    """A profile's step ``T``, GPU busy time ``G`` and host floor band (µs per step)."""

    step_us: float
    gpu_us: float
    low_us: float
    high_us: float


def floor_of(p: Mapping[str, Any]) -> Floor | None:
    """The host floor of a stored profile's data; None without host time or steps."""
    h, m = p.get("host"), p.get("mean_step")
    if not h or not m or float(m.get("span_us") or 0.0) <= 0:
        return None
    step = float(m["span_us"])
    hi = min(float(h["loop_us"]), step)
    lo = min(float(h["range_us"]), hi)
    return Floor(step, float(m.get("busy_us") or 0.0), lo, hi)


def kernel_bound(p: Mapping[str, Any], s: float, k: float) -> tuple[float | None, float]:
    """(low, high) TPOT speed-up when a share ``s`` of the step (GPU time / span) becomes
    ``k``× faster (``k = inf``: free); ``low``, the host's floor at its pessimistic end, is None
    without host time or where the host cannot bind (a GPU-only bound). The pair is a ceiling
    with its band, not a prediction of the lever: a kernel made only a little faster buys less
    than ``low``, so the predicted-vs-measured check judges ``high`` as a bound."""
    gpu_only = amdahl(s, k)
    f = floor_of(p)
    if f is None:
        return None, gpu_only
    cut = min(max(s, 0.0), 1.0) * f.step_us * (1.0 if math.isinf(k) else 1.0 - 1.0 / k)
    g = max(f.gpu_us - cut, 0.0)
    high = min(gpu_only, f.step_us / max(f.low_us, g, 1e-9))
    low = max(1.0, f.step_us / max(f.high_us, g, 1e-9))
    return (None if low >= gpu_only else min(low, high)), high
