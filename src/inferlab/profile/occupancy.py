"""Under-occupied kernels: a grid of fewer blocks than the GPU has SMs keeps at most
``blocks / SMs`` of them busy. Listed per (kernel name, grid size), by time."""

from __future__ import annotations

import numpy as np

from inferlab.store.models import OccupancyRow

from .categories import short_name

__all__ = ["occupancy"]


def occupancy(
    names: list[str],
    name_id: np.ndarray,
    blocks: np.ndarray,
    dur: np.ndarray,
    is_kernel: np.ndarray,
    sm: int,
    kernel_us: float,
) -> tuple[list[OccupancyRow], float]:
    """Rows per (kernel, grid) with fewer blocks than ``sm``, and their share of kernel time."""
    low = is_kernel & (blocks > 0) & (blocks < sm)
    if not low.any():
        return [], 0.0
    key = name_id[low] * (int(sm) + 1) + blocks[low]
    uk, inv = np.unique(key, return_inverse=True)
    t = np.bincount(inv, weights=dur[low])
    n = np.bincount(inv)
    out = []
    for j in np.argsort(-t, kind="stable"):
        nid, nblk = divmod(int(uk[j]), int(sm) + 1)
        out.append(
            OccupancyRow(
                name=names[nid],
                short=short_name(names[nid]),
                blocks=nblk,
                sm_fraction=nblk / sm,
                time_us=float(t[j]),
                share=float(t[j]) / kernel_us if kernel_us else 0.0,
                count=int(n[j]),
            )
        )
    return out, (float(dur[low].sum()) / kernel_us if kernel_us else 0.0)
