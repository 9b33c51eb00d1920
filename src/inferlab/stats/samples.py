"""Validated sample arrays (finite, non-empty, one per trial) for the statistics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["CHUNK_ELEMENTS", "finite_array", "trials_arrays"]

CHUNK_ELEMENTS = 4_000_000  # resampling work array size (float64: 32 MB)


def finite_array(samples: Sequence[float], what: str) -> np.ndarray:
    """``samples`` as a flat float array; ValueError naming ``what`` when empty or not finite."""
    arr = np.asarray(samples, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{what} is empty")
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ValueError(f"{what} has {bad} NaN/infinite value(s)")
    return arr


def trials_arrays(trials: Sequence[Sequence[float]], what: str) -> list[np.ndarray]:
    """One finite array per trial; ValueError when there are no trials or < 2 samples in all."""
    if len(trials) == 0:
        raise ValueError(f"{what} has no trials")
    out = [finite_array(t, f"{what} trial {i + 1}") for i, t in enumerate(trials)]
    total = sum(t.size for t in out)
    if total < 2:
        raise ValueError(f"{what} has {total} sample(s); an interval needs at least 2")
    return out
