"""Amdahl ceilings of a share of the decode step, computed as ``inferlab profile`` does.

With ``s`` the fraction of the decode step's GPU span a lever acts on (the thing's GPU time /
the step span; in a host-bound step that is much less than its share of kernel time), the step —
and so TPOT — speeds up at most ``1/(1 − s)`` if the thing became free and ``1/(1 − s/2)`` if it
became 2× faster; TPOT falls by at most ``s`` (``s/2``). A kernel lever (``kernel=True``) is
also bounded by the host's floor when the profile carries host time (:mod:`.host`): its points
then carry a band, ``low`` – ``high``."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inferlab.profile.analysis import amdahl

from .evidence import ConfigEvidence, StoredProfile
from .host import floor_of, kernel_bound
from .model import PointBound

__all__ = [
    "amdahl",
    "category_share",
    "ceiling_clause",
    "host_clause",
    "pct",
    "share_clause",
    "share_points",
    "span_share",
    "tpot_floor",
]


def pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}%"


def span_share(p: Mapping[str, Any], time_us: float) -> float | None:
    """``time_us`` as a fraction of the profile's total decode span (None without a span)."""
    span = float(p.get("span_us") or 0.0)
    return min(max(time_us / span, 0.0), 1.0) if span > 0 else None


def category_share(p: Mapping[str, Any], name: str) -> float | None:
    """A category's GPU time as a fraction of the decode span (0 when absent)."""
    t = sum(float(r["time_us"]) for r in p.get("categories") or [] if r["name"] == name)
    return span_share(p, t)


def share_points(
    profiles: Sequence[StoredProfile],
    share: Callable[[Mapping[str, Any]], float | None],
    *,
    note: str = "",
    kernel: bool = False,
) -> list[PointBound]:
    """One ceiling per profiled load point from ``share(profile_data) -> s``; ``kernel``: the
    share is kernel time, so the host's floor bounds it too (a band when the profile has it)."""
    out = []
    for p in profiles:
        s = share(p.data)
        if s is None:
            continue
        low, high = kernel_bound(p.data, s, math.inf) if kernel else (None, amdahl(s, math.inf))
        at2 = kernel_bound(p.data, s, 2.0)[1] if kernel else amdahl(s, 2.0)
        extra = f"GPU-only Amdahl ×{amdahl(s, math.inf):.3f}" if low is not None else ""
        out.append(
            PointBound(
                p.label,
                p.concurrency,
                high=high,
                low=low,
                share=s,
                at_2x=at2,
                note="; ".join(x for x in (note, extra) if x),
            )
        )
    return out


def host_clause(profiles: Sequence[StoredProfile]) -> list[str]:
    """``host at C=1: the engine thread's loop 3.02 ms (step range 1.64 ms) of the 3.08 ms
    step, GPU busy 2.86 ms: …`` for each profile with host time."""
    out = []
    for p in profiles:
        f = floor_of(p.data)
        if f is None:
            continue
        out.append(
            f"host {_at(p.label)}: the engine thread's loop {f.high_us / 1e3:.2f} ms per step "
            f"(its step range {f.low_us / 1e3:.2f} ms) of the {f.step_us / 1e3:.2f} ms step, "
            f"kernels busy {f.gpu_us / 1e3:.2f} ms: with full overlap no kernel lever takes "
            f"the step below the host's floor, {f.low_us / 1e3:.2f}–{f.high_us / 1e3:.2f} ms "
            "(the profiler slows the host, so the floor is a band)"
        )
    return out


def _at(label: str) -> str:
    return "at an unknown load point" if label == "?" else f"at {label}"


def share_clause(what: str, points: Sequence[PointBound], verb: str = "is") -> str:
    """``fp8_gemm is 6.1% of decode at C=1 and 0.6% at C=16``."""
    parts = [
        f"{pct(p.share)}{' of decode' if i == 0 else ''} {_at(p.label)}"
        for i, p in enumerate(points)
    ]
    tail = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{what} {verb} {tail}"


def ceiling_clause(points: Sequence[PointBound]) -> str:
    """``at most ×1.065 (−6.1% TPOT) even if free`` (per point when there are several)."""

    def one(p: PointBound) -> str:
        ch = p.tpot_change
        tp = "" if ch is None else f" ({100 * ch:+.1f}% TPOT)".replace("-", "−")
        if p.high is None or not math.isfinite(p.high):
            return "×∞"
        band = f"×{p.low:.3f}–" if p.low is not None else ""
        return f"{band}×{p.high:.3f}{tp}"

    floor = " (the host's floor)" if any(p.low is not None for p in points) else ""
    if len(points) == 1:
        return f"at most {one(points[0])} even if free{floor}"
    return (
        "at most " + ", ".join(f"{one(p)} {_at(p.label)}" for p in points) + f" even if free{floor}"
    )


def tpot_floor(cfg: ConfigEvidence, points: Sequence[PointBound]) -> list[str]:
    """``TPOT at C=1: 94.0 ms measured → at best 88.3 ms`` where the config's sweep has the
    profiled point."""
    out = []
    for p in points:
        sw = cfg.sweep.get(p.concurrency) if p.concurrency is not None else None
        if sw is not None and p.high:
            out.append(
                f"TPOT at {p.label}: {sw.tpot_ms:.1f} ms measured (median) → at best "
                f"{sw.tpot_ms / p.high:.1f} ms"
            )
    return out
