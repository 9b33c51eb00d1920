"""Which dimensions are worth searching: each one's Amdahl bound from the baseline's levers.

A dimension's item (``flag --max-num-seqs``, ``env NCCL_PROTO``, ``files fp8_gemm``) is
explained by the lever rules whose ``diff`` matches it (``levers.registry``). The most those
levers can buy the baseline at the search's load point (their ``high``, a TPOT speed-up) is the
dimension's bound. A bound below ``1 + min_effect`` prunes the dimension: no value of it can
move the objective by the minimum effect. A dimension no rule explains, or whose levers carry
no number at that point, has no bound and is searched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.config.search import SearchDim
from inferlab.levers.model import Lever, speedup_text
from inferlab.levers.registry import rules_for

__all__ = ["DimBound", "bound_dims", "item_of"]


def item_of(dim: SearchDim) -> str:
    """The dimension as a lever diff item (``levers.predict.diff_items`` spells them)."""
    if dim.flag is not None:
        return f"flag {dim.flag}"
    if dim.env is not None:
        return f"env {dim.env}"
    return f"files {dim.files}"


@dataclass(frozen=True)
class DimBound:
    """A dimension's bound at the search's point: ``high`` (None: unbounded or no rule),
    the lever titles it comes from, and whether it is pruned."""

    key: str
    high: float | None
    levers: tuple[str, ...]
    pruned: bool
    rules: tuple[str, ...] = ()

    def why(self, at: str) -> str:
        if not self.rules:
            return "no lever rule explains it: searched without a bound"
        if not self.levers:
            return f"{', '.join(self.rules)}: no bound from the baseline's evidence: searched"
        if self.high is None:
            return f"{', '.join(self.levers)}: no bound at {at}: searched"
        verb = "pruned" if self.pruned else "searched"
        return f"{', '.join(self.levers)}: ≤ {speedup_text(self.high)} at {at}: {verb}"


def bound_dims(
    dims: Sequence[SearchDim], levers: Sequence[Lever], at: str, min_effect: float
) -> list[DimBound]:
    """Each dimension's bound from the baseline's ranked ``levers`` at load point ``at``."""
    out = []
    for d in dims:
        rules = rules_for(item_of(d))
        kinds = {r.kind for r in rules}
        mine = [lv for lv in levers if lv.kind in kinds]
        highs = [p.high for lv in mine for p in lv.points if p.label == at]
        known = [h for h in highs if h is not None]
        high = None
        if mine and known and len(known) == len(highs):
            high = max(known)
        pruned = high is not None and not math.isinf(high) and high < 1.0 + min_effect
        titles = tuple(dict.fromkeys(lv.title for lv in mine))
        out.append(DimBound(d.key, high, titles, pruned, tuple(r.title for r in rules)))
    return out
