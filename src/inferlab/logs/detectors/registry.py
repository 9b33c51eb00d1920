"""The detector registry: ``@detector(kind)`` registers ``fn(state) -> [Finding]``, and the
helpers the detectors share for their messages."""

from __future__ import annotations

from collections.abc import Callable

from inferlab.logs.model import Finding
from inferlab.logs.state import LogState

__all__ = ["DETECTORS", "Detector", "detector", "listing", "num"]

Detector = Callable[[LogState], list[Finding]]
DETECTORS: dict[str, Detector] = {}


def detector(kind: str) -> Callable[[Detector], Detector]:
    """Register ``fn(state) -> [Finding]`` as the detector of findings of ``kind``."""

    def deco(fn: Detector) -> Detector:
        DETECTORS[kind] = fn
        return fn

    return deco


def num(v: float) -> str:
    """A rate as a person would say it: 3 significant figures, no exponent."""
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def listing(items: list[str], cap: int = 8) -> str:
    """``items`` joined, the first ``cap`` of them ("and N more")."""
    more = len(items) - cap
    return ", ".join(items[:cap]) + (f" and {more} more" if more > 0 else "")
