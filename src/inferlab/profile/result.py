"""What an analysis of one segment of one trace holds (times µs). ``Profile.to_dict`` is what is
stored (``store.add_analysis("profile", ...)``), printed with ``--json`` and rendered."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from pydantic import BaseModel

from inferlab.store.models import HostBody, OccupancyRow, ProfileRow, ProfileStep

__all__ = ["VERSION", "Profile", "finite"]

#: 2: ``mode`` ("gpu" | "cpu") and ``share_of``; CPU-mode profiles (issue 14)
#: 3: ``host``, the engine thread's time per step (issue 45)
VERSION = 3


@dataclass
class Profile:
    """The analysis of one segment of one trace. ``to_dict`` is what is stored and printed."""

    trace: str
    format: str
    segment: str
    step_source: str
    device: str | None
    sm_count: int | None
    steps: list[ProfileStep]
    span_us: float
    busy_us: float
    kernel_us: float
    kernels: int
    kernel_names: int
    copy_us: float
    copies: int
    categories: list[ProfileRow]
    kernel_rows: list[ProfileRow]  # every kernel (CPU op) name, by time
    unknown: list[str]
    occupancy: list[OccupancyRow]
    occupancy_share: float | None
    graph_launches: int
    graph_kernels: int
    verdict: str
    warnings: list[str] = field(default_factory=list)
    #: "gpu": kernels on the GPU row; "cpu": CPU ops of the engine's worker thread
    mode: str = "gpu"
    #: what shares are of: "kernel time" (GPU) or "step time" (CPU: categories sum to 100%)
    share_of: str = "kernel time"
    #: trace metadata worth keeping (e.g. ``{"simulated": True, ...}`` from the sim's traces)
    meta: dict[str, Any] = field(default_factory=dict)
    #: the host's time per step from the trace's CPU side (:mod:`.host`); None when unknown
    host: HostBody | None = None
    version: int = VERSION

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def mean_step(self) -> dict[str, float] | None:
        """Mean span, busy, idle (µs), kernels and (when every step names it) batch per step;
        ``None`` without steps."""
        if not self.steps:
            return None
        n = len(self.steps)
        batches = [s.batch for s in self.steps if s.batch is not None]
        out = {
            "span_us": sum(s.span_us for s in self.steps) / n,
            "busy_us": sum(s.busy_us for s in self.steps) / n,
            "idle_us": sum(s.idle_us for s in self.steps) / n,
            "kernels": sum(s.kernels for s in self.steps) / n,
            "min_span_us": min(s.span_us for s in self.steps),
            "max_span_us": max(s.span_us for s in self.steps),
        }
        if len(batches) == n:
            out["batch"] = sum(batches) / n
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: an infinite bound (a thing that is the whole step) becomes ``None``."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["mean_step"] = self.mean_step()
        out: dict[str, Any] = finite(d)
        return out


def finite(x: Any) -> Any:
    """``x`` with every non-finite float replaced by ``None`` (recursively; a model as its
    dict)."""
    if isinstance(x, BaseModel):
        return finite(x.model_dump())
    if isinstance(x, float):
        return x if np.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite(v) for v in x]
    return x
