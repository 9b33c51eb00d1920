"""Multi-turn sessions: TTFT and prompt length by turn index, where a prefix cache shows.

A turn's prompt resends the whole conversation so far, so later turns are longer: without a
prefix cache their TTFT grows with the history; with one, only the new tokens are prefilled.
Each turn's median TTFT comes with a percentile-bootstrap 95% interval over its requests
(one per user), so two turns (or two configs' same turn) are told apart only beyond noise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from inferlab.records import RequestRecord
from inferlab.stats.summary import bootstrap_ci

__all__ = ["TurnStats", "by_turn"]


@dataclass(frozen=True)
class TurnStats:
    """One turn index over every user: requests counted, failed, median TTFT (ms) with its
    95% bootstrap interval, and the mean prompt length (tokens, as the server counted)."""

    turn: int
    requests: int
    failed: int
    ttft_p50_ms: float
    ttft_p50_low_ms: float
    ttft_p50_high_ms: float
    prompt_tokens_mean: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in asdict(self).items()
        }


def by_turn(records: Sequence[RequestRecord], seed: int = 0) -> list[TurnStats]:
    """TTFT by turn of a sessions point's counted requests (others are left out); [] when
    no request has a turn."""
    turns: dict[int, list[RequestRecord]] = {}
    for r in records:
        if r.turn is not None and r.counted:
            turns.setdefault(r.turn, []).append(r)
    out = []
    for t in sorted(turns):
        rs = turns[t]
        ok = [r for r in rs if r.ok and r.ttft_ns is not None]
        ttft = [r.ttft_ns / 1e6 for r in ok if r.ttft_ns is not None]
        ci = bootstrap_ci(ttft, "median", seed=seed + t)
        prompts = [r.usage_prompt_tokens for r in ok if r.usage_prompt_tokens is not None]
        out.append(
            TurnStats(
                turn=t,
                requests=len(rs),
                failed=len(rs) - len(ok),
                ttft_p50_ms=ci.estimate,
                ttft_p50_low_ms=ci.low,
                ttft_p50_high_ms=ci.high,
                prompt_tokens_mean=statistics.fmean(prompts) if prompts else None,
            )
        )
    return out
