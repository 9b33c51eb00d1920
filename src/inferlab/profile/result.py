"""What an analysis of one segment of one trace holds (times µs). ``Profile.to_dict`` is what is
stored (``store.add_analysis("profile", ...)``), printed with ``--json`` and rendered."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from inferlab.store.models import ProfileFields

__all__ = ["VERSION", "Profile", "finite"]

#: 2: ``mode`` ("gpu" | "cpu") and ``share_of``; CPU-mode profiles (issue 14)
#: 3: ``host``, the engine thread's time per step (issue 45)
VERSION = 3


class Profile(ProfileFields):
    """The analysis of one segment of one trace, with this version's defaults; mutable while
    the analysis completes it. ``to_dict`` is what is stored and printed."""

    model_config = ConfigDict(frozen=False)

    mode: str = "gpu"
    share_of: str = "kernel time"
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
        d = {name: getattr(self, name) for name in type(self).model_fields}
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
