"""Open-loop arrival schedules, precomputed as absolute offsets from the start (seconds)."""

from __future__ import annotations

import numpy as np

__all__ = ["arrival_offsets"]


def arrival_offsets(
    rate: float,
    *,
    arrival: str = "poisson",
    burstiness: float = 1.0,
    count: int | None = None,
    duration_s: float | None = None,
    seed: int = 0,
) -> list[float]:
    """Send times (s from start) of a renewal process with mean ``rate`` requests/s.

    ``poisson``: exponential gaps. ``gamma``: gamma gaps with shape ``burstiness`` and the same
    mean (shape < 1 is burstier than Poisson, > 1 smoother). The first request is sent at 0.
    Stops after ``count`` arrivals or before ``duration_s``, whichever comes first.
    """
    if rate <= 0:
        raise ValueError("rate must be > 0")
    if count is None and duration_s is None:
        raise ValueError("give count or duration_s")
    rng = np.random.default_rng(seed)
    limit = count if count is not None else int(rate * float(duration_s or 0) * 2 + 100)
    if arrival == "poisson":
        gaps = rng.exponential(1.0 / rate, size=limit)
    elif arrival == "gamma":
        gaps = rng.gamma(burstiness, 1.0 / (rate * burstiness), size=limit)
    else:
        raise ValueError(f"unknown arrival process {arrival!r}")
    gaps[0] = 0.0
    times = np.cumsum(gaps)
    if duration_s is not None:
        times = times[times < duration_s]
    if count is not None:
        times = times[:count]
    return [float(t) for t in times]
