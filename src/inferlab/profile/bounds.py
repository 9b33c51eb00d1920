"""Amdahl bounds and the host-bound verdict of a segment.

With ``f`` = time / span of the segment (the step time a thing can remove at most), the whole
step speeds up at most ``1 / (1 − f + f/k)`` if it becomes k× faster and ``1 / (1 − f)`` if it
vanished. The verdict compares busy time (kernels, or CPU ops) with the step span.
"""

from __future__ import annotations

from inferlab.store.models import ProfileRow

__all__ = ["HOST_BOUND", "PARTLY", "amdahl", "cpu_verdict", "gpu_verdict", "make_row", "ms"]

HOST_BOUND, PARTLY = 0.6, 0.85


def ms(us: float) -> str:
    v = us / 1000
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def amdahl(f: float, k: float) -> float:
    """Whole-step speed-up bound when a fraction ``f`` of it becomes ``k``× faster
    (``k = inf``: vanishes)."""
    f = min(max(f, 0.0), 1.0)
    rest = 1 - f + (0.0 if k == float("inf") else f / k)
    return float("inf") if rest <= 0 else 1 / rest


def make_row(
    name: str,
    category: str,
    time_us: float,
    count: int,
    *,
    span_us: float,
    share_base_us: float | None,
    n_steps: int,
    short: str = "",
) -> ProfileRow:
    """A table row; ``share_base_us`` None: no share (memcpy/memset beside kernel time)."""
    f = time_us / span_us if span_us > 0 else 0.0
    share = None
    if share_base_us is not None:
        share = time_us / share_base_us if share_base_us > 0 else 0.0
    return ProfileRow(
        name=name,
        category=category,
        time_us=time_us,
        share=share,
        count=count,
        mean_us=time_us / count if count else 0.0,
        per_step_us=time_us / n_steps if n_steps else None,
        amdahl_2x=amdahl(f, 2),
        amdahl_free=amdahl(f, float("inf")),
        short=short,
    )


def gpu_verdict(busy_us: float, span_us: float, graphs: int, per: str) -> str:
    """``per``: "per decode step" or "over the whole trace's GPU span"."""
    if span_us <= 0:
        return "no steps: no per-step verdict"
    frac = busy_us / span_us
    head = f"kernels busy {ms(busy_us)} of {ms(span_us)} ms {per} ({frac:.0%})"
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


def cpu_verdict(busy_us: float, span_us: float, segment: str) -> str:
    """Ops busy on the worker thread vs the engine iteration (CPU mode)."""
    if span_us <= 0:
        return "no steps: no per-step verdict"
    frac = busy_us / span_us
    head = (
        f"CPU ops busy {ms(busy_us)} of {ms(span_us)} ms per {segment} iteration of the "
        f"worker thread ({frac:.0%})"
    )
    if frac < HOST_BOUND:
        return (
            f"{head}: framework-bound; Python between ops and waiting for the engine core "
            "take most of the step, so faster ops (kernels, BLAS, OpenMP) cannot help much"
        )
    if frac < PARTLY:
        return f"{head}: partly framework-bound; time outside ops costs {1 - frac:.0%} of the step"
    return f"{head}: compute-bound; only faster ops shorten the step (see the Amdahl bounds)"
