"""What a lever rule returns: a lever with its ceiling at each load point, evidence, action and
confidence. Every number is a TPOT speed-up: the config's TPOT divided by the TPOT it would have
with the lever (×1.065 = TPOT 6.1% lower); per-user speed (1 / TPOT) changes by the same factor.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from inferlab.config.pattern import ClosedLoop

__all__ = ["Lever", "LeverOptions", "Model", "PointBound", "label_of", "speedup_text"]

#: how a lever's numbers are meant: an Amdahl ceiling, a speculative-decoding band, or neither
Model = Literal["amdahl", "spec", "none"]


def label_of(concurrency: int | None) -> str:
    """The load-point label of a concurrency (``"C=16"``); ``"?"`` when unknown."""
    return "?" if concurrency is None else ClosedLoop(concurrency).label


def speedup_text(x: float | None, digits: int = 3) -> str:
    """``×1.065``; ``×∞`` for an unbounded ceiling; ``–`` when unknown."""
    if x is None:
        return "–"
    if math.isinf(x) or x > 1e6:
        return "×∞"
    return f"×{x:.{digits}f}"


@dataclass(frozen=True)
class PointBound:
    """A lever at one load point. ``high`` is the most it can buy (an Amdahl ceiling, or the
    optimistic end of a band); ``low`` the pessimistic end of a band (None for a bound).
    ``share`` is the fraction of the decode step's GPU span the lever acts on."""

    label: str
    concurrency: int | None
    high: float | None
    low: float | None = None
    share: float | None = None
    at_2x: float | None = None
    extrapolated: bool = False
    note: str = ""

    @property
    def tpot_change(self) -> float | None:
        """The largest TPOT change the ceiling allows, as a fraction (−0.061 = −6.1%)."""
        if self.high is None or self.high <= 0:
            return None
        return 1.0 / self.high - 1.0 if not math.isinf(self.high) else -1.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in d.items()}


@dataclass
class Lever:
    """One candidate lever for one config (``config`` None: profiles stored without a config).

    ``summary`` is the plain one-line sentence; ``points`` its numbers per load point."""

    kind: str
    title: str
    config: str | None
    model: Model
    points: list[PointBound]
    summary: str
    evidence: list[str] = field(default_factory=list)
    action: str = ""
    confidence: str = ""
    name: str = ""  # what inside the kind (a kernel's name), when a kind has several

    @property
    def key(self) -> str:
        """Identity of the lever across runs of ``inferlab levers``: kind, config, name."""
        return ":".join(x for x in (self.kind, self.config or "", self.name) if x) or self.kind

    @property
    def ceiling(self) -> float | None:
        """The ranking key: the largest ``high`` over the load points (None: no number)."""
        vals = [p.high for p in self.points if p.high is not None]
        return max(vals) if vals else None

    def to_dict(self) -> dict[str, Any]:
        c = self.ceiling
        return {
            "kind": self.kind,
            "key": self.key,
            "title": self.title,
            "config": self.config,
            "model": self.model,
            "name": self.name,
            "summary": self.summary,
            "ceiling": None if c is None or math.isinf(c) else c,
            "points": [p.to_dict() for p in self.points],
            "evidence": list(self.evidence),
            "action": self.action,
            "confidence": self.confidence,
        }


@dataclass(frozen=True)
class LeverOptions:
    """User inputs of ``inferlab levers``: an accept length τ (tokens per verify step), the
    draft tokens k per step, and the draft step's cost δ relative to a target step."""

    config: str | None = None
    accept_length: float | None = None
    draft_tokens: int | None = None
    draft_cost: float | None = None
