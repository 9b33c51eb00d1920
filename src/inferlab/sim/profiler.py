"""SGLang's profiling endpoints on the SIMULATED engine: ``/start_profile``, ``/stop_profile``.

``POST /start_profile`` takes SGLang's body (``output_dir``, ``num_steps``, ``activities``,
``profile_prefix``, ``with_stack``, ``record_shapes``; the default ``output_dir`` is
``$SGLANG_TORCH_PROFILER_DIR``, else ``/tmp``). From then on every step the batching loop runs
is recorded; after ``num_steps`` steps the capture stops by itself and writes one
``{prefix}-{profile_id}-TP-{r}.trace.json.gz`` per rank (``--tp-size``), as SGLang does, without
answering anything more. Without ``num_steps``, ``POST /stop_profile`` stops it and answers once
the files are written. The traces are synthesized (:mod:`inferlab.sim.tracegen`): SIMULATED.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.sim.kernels import check_mix, get_mix
from inferlab.sim.model import StepModel
from inferlab.sim.presets import Levers, Preset
from inferlab.sim.tracegen import StepRecord, TraceContext, write_trace

__all__ = ["Capture", "ProfileRequestError", "SimProfiler"]

_ACTIVITIES = ("CPU", "GPU")


class ProfileRequestError(Exception):
    """A bad or untimely profiling request (HTTP 400, SGLang's message)."""


@dataclass
class Capture:
    """One capture in progress: where it goes, how many steps, what was recorded."""

    out_dir: Path
    prefix: str | None
    num_steps: int | None
    activities: tuple[str, ...]
    profile_id: str
    steps: list[StepRecord] = field(default_factory=list)
    first_ns: int = 0
    first_wall_us: float = 0.0

    def file_name(self, rank: int) -> str:
        """SGLang's ``{prefix}-{profile_id}-TP-{rank}.trace.json.gz``."""
        head = f"{self.prefix}-" if self.prefix else ""
        return f"{head}{self.profile_id}-TP-{rank}.trace.json.gz"


def _body(obj: dict[str, Any]) -> tuple[str | None, int | None, tuple[str, ...], str | None]:
    out, steps = obj.get("output_dir"), obj.get("num_steps")
    acts, prefix = obj.get("activities"), obj.get("profile_prefix")
    if out is not None and not isinstance(out, str):
        raise ProfileRequestError("output_dir: expected a string")
    if steps is not None and (type(steps) is not int or steps < 1):
        raise ProfileRequestError("num_steps: expected a positive integer")
    if acts is None:
        acts = list(_ACTIVITIES)
    if not isinstance(acts, list) or not all(isinstance(a, str) for a in acts):
        raise ProfileRequestError('activities: expected a list such as ["CPU", "GPU"]')
    if prefix is not None and not isinstance(prefix, str):
        raise ProfileRequestError("profile_prefix: expected a string")
    if obj.get("start_step") is not None:
        raise ProfileRequestError("start_step: not simulated (start when the load is steady)")
    return out, steps, tuple(a for a in acts if a in _ACTIVITIES), prefix


class SimProfiler:
    """The capture state of one simulated server (batching mode only)."""

    def __init__(
        self,
        preset: Preset,
        model: StepModel,
        levers: Levers,
        tp_size: int,
        time_scale: float,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.mix = get_mix(preset.name)
        savings = {"tuned_fp8": preset.tuned_fp8_saving_ms, "nccl_ll": preset.nccl_ll_saving_ms}
        check_mix(self.mix, savings, preset.fixed_ms)
        self.preset, self.model, self.levers = preset, model, levers
        self.tp_size, self.time_scale = tp_size, time_scale
        self.capture: Capture | None = None
        self.captures = 0
        self.env = os.environ if env is None else env  # SGLANG_TORCH_PROFILER_DIR

    @property
    def active(self) -> bool:
        return self.capture is not None

    def start(self, obj: dict[str, Any]) -> Capture:
        """Begin a capture (``ProfileRequestError`` when one runs or the body is wrong)."""
        if self.capture is not None:
            raise ProfileRequestError("Profiling is already in progress. Call /stop_profile first.")
        out, steps, acts, prefix = _body(obj)
        base = out or self.env.get("SGLANG_TORCH_PROFILER_DIR") or "/tmp"
        self.captures += 1
        self.capture = Capture(Path(base), prefix, steps, acts, f"{time.time():.6f}")
        return self.capture

    def record(self, start_ns: int, batch: int, prefill_tokens: int, joining: int) -> bool:
        """A step starts at ``start_ns`` (perf counter); True when the capture has its steps."""
        cap = self.capture
        if cap is None:
            return False
        if not cap.steps:
            cap.first_ns, cap.first_wall_us = start_ns, time.time() * 1e6
        # model time: the wall offset divided by the time scale (µs)
        ts = cap.first_wall_us + (start_ns - cap.first_ns) / 1000.0 / self.time_scale
        eager = batch > self.model.cuda_graph_max_bs
        cap.steps.append(StepRecord(ts, batch, prefill_tokens, joining, eager))
        return cap.num_steps is not None and len(cap.steps) >= cap.num_steps

    def stop(self) -> Capture:
        """End the capture in progress (``ProfileRequestError`` when there is none)."""
        cap = self.capture
        if cap is None:
            raise ProfileRequestError("Profiling is not in progress. Call /start_profile first.")
        self.capture = None
        return cap

    def write(self, cap: Capture) -> list[Path]:
        """Every rank's trace of ``cap`` (run off the event loop: it takes tens of ms)."""
        ctx = TraceContext(
            preset=self.preset,
            mix=self.mix,
            model=self.model,
            levers=self.levers,
            ranks=self.tp_size,
            seed=self.captures,
            profile_id=cap.profile_id,
            activities=cap.activities,
        )
        out = []
        for rank in range(self.tp_size):
            path = cap.out_dir / cap.file_name(rank)
            write_trace(path, ctx, cap.steps, rank)
            out.append(path)
        return out
