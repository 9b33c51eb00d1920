"""Timing that can be trusted on 10–40 µs kernels: CUDA-graph replay over rotating inputs.

One *sample* is one replay of a captured CUDA graph that holds ``launches`` back-to-back
launches of the same kernel, each on the next of ``copies`` input sets (A, As, B, Bs, C) that
together exceed 3× the L2, so no launch finds its operands in the cache left by the previous
one; the sample is the replay's device time (CUDA events) / ``launches``, in µs. A config's time
is the median of its samples. Several configs are replayed *interleaved* (A B C A B C …), so a
drift of the clocks over the run (at M ≥ 1024 the first config timed was seen 5–10 % faster,
fp8_block_gemm_h200.md) spreads over all of them instead of favouring the first.

``triton.testing.do_bench`` is not used: it was measured up to 2.4× apart between runs of the
same config here. Only :func:`graph_samples` touches the GPU (torch passed in)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "L2_BYTES_H200",
    "copies_needed",
    "graph_samples",
    "median",
]

#: H200 L2 cache, bytes (60 MiB)
L2_BYTES_H200 = 60 << 20


def copies_needed(bytes_per_set: int, l2_bytes: int, *, factor: float = 3.0, least: int = 2) -> int:
    """Input sets to rotate over so that together they exceed ``factor`` × L2 (at least
    ``least``)."""
    if bytes_per_set <= 0:
        raise ValueError(f"bytes_per_set must be positive, got {bytes_per_set}")
    return max(least, math.ceil(factor * l2_bytes / bytes_per_set))


def median(samples: Sequence[float]) -> float:
    """Median of ``samples`` (``inf`` when empty: a config that produced none cannot win)."""
    return float(statistics.median(samples)) if samples else math.inf


def graph_samples(
    torch: Any,
    launchers: Sequence[Callable[[int], None]],
    *,
    launches: int,
    replays: int,
    warmup: int = 1,
) -> list[list[float]]:
    """Per-launch µs samples for each launcher (``launcher(i)`` launches once on input set i).

    Each launcher is captured once into a graph of ``launches`` launches (i = 0 … launches-1;
    the launcher maps i onto its rotating copies); the graphs are replayed interleaved,
    ``warmup`` rounds untimed then ``replays`` timed rounds. The launchers must already have run
    once eagerly (compiled, loaded)."""
    graphs = []
    try:
        for launch in launchers:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for i in range(launches):
                    launch(i)
            graphs.append(g)
        for _ in range(warmup):
            for g in graphs:
                g.replay()
        events = []
        for _ in range(replays):
            row = []
            for g in graphs:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                g.replay()
                end.record()
                row.append((start, end))
            events.append(row)
        torch.cuda.synchronize()
        out: list[list[float]] = [[] for _ in graphs]
        for row in events:
            for j, (start, end) in enumerate(row):
                out[j].append(start.elapsed_time(end) * 1e3 / launches)
        return out
    finally:
        for g in graphs:
            g.reset()
