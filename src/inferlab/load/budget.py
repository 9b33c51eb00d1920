"""An adaptive point's request budget grows with its concurrency: at least
:data:`inferlab.stats.trust.MIN_WAVES` waves of C counted requests.

A closed-loop point at C sends C requests at once; its first and last waves are the ramp-up and
the drain, and what lies between is its steady window. ``requests = "auto"`` stops a point
between ``min_requests`` and ``max_requests`` counted requests, which at a high C is few waves
(the H200 campaign's ``max_requests = 150`` at C=128: about two, and output throughput read
±130–146%). So each closed-loop adaptive point at C ≥ 2 measures at least MIN_WAVES × C: its
``min_requests`` (first check) and, when capped, ``max_requests`` are raised to that (C=16:
128; C=128: 1024), never lowered. A point that still ends shorter (``max_duration_s``, a fixed
``requests = N``) carries no claim in ``compare`` (``stats.trust.too_short``).
"""

from __future__ import annotations

from inferlab.config.bench import BenchConfig
from inferlab.stats.trust import MIN_WAVES

__all__ = ["point_budget", "waves_requests"]


def waves_requests(concurrency: int | None) -> int:
    """Counted requests of MIN_WAVES waves at ``concurrency`` (0 below C = 2, or not C=N)."""
    return MIN_WAVES * concurrency if concurrency is not None and concurrency >= 2 else 0


def point_budget(cfg: BenchConfig, concurrency: int | None) -> BenchConfig:
    """``cfg`` for one point: an adaptive closed-loop point's ``min_requests`` and (when
    capped) ``max_requests`` raised to MIN_WAVES × C; ``cfg`` itself otherwise."""
    need = waves_requests(concurrency)
    if not cfg.adaptive or cfg.min_requests >= need:
        return cfg
    cap = max(cfg.max_requests, need) if cfg.max_requests else 0
    return cfg.model_copy(update={"min_requests": need, "max_requests": cap})
