"""Which dimensions are worth searching: each one's Amdahl bound from the baseline's levers.

A dimension's item (``flag --max-num-seqs``, ``env NCCL_PROTO``, ``files fp8_gemm``) is
explained by the lever rules whose ``diff`` matches it (``levers.registry``). The most those
levers can buy the baseline at the search's load point (their ``high``, a TPOT speed-up) is the
dimension's bound. A bound below ``1 + min_effect`` prunes the dimension: no value of it can
move the objective by the minimum effect. A dimension no rule explains, or whose levers carry
no number at that point, has no bound and is searched.

A flag that bounds the batch in requests acts alike for every value ≥ C at a closed-loop point
of C users, since no batch there holds more than C (``BATCH_BOUNDS``): a running-request cap
(``--max-num-seqs``, ``--max-running-requests``) admits them all, and SGLang's (and the sim's)
``--cuda-graph-max-bs`` runs every decode batch in a CUDA graph. Its values ≥ C are one (the
smallest is kept: a larger one only costs memory; a range's top is lowered to C), and a flag
whose every value is ≥ C is pruned. vLLM's capture sizes (``compilation_config``
``max_cudagraph_capture_size``) count tokens (a decode step with k speculative tokens is
``b × (1 + k)`` of them, a chunked-prefill step more), so they are not one of these.

Pruned together, dimensions whose levers are different shares of the step add up (Amdahl: the
shares ``1 − 1/high`` of distinct levers sum), so they are pruned by their joint bound: the
smallest bounds first, while ``1 / (1 − Σ share)`` over their distinct levers stays below
``1 + min_effect``. Two dimensions each ×1.012 of different levers are ×1.024 together: one is
pruned, the other searched. Dimensions on the same lever (``NCCL_PROTO``, ``NCCL_ALGO``: both
the communication share) share one bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from inferlab.config.pattern import closed_concurrency
from inferlab.config.search import SearchDim, SearchSection
from inferlab.errors import ConfigError
from inferlab.levers import LeverOptions, decide
from inferlab.levers.model import Lever, speedup_text
from inferlab.levers.registry import rules_for
from inferlab.store import Store

__all__ = [
    "BATCH_BOUNDS",
    "DimBound",
    "bound_dims",
    "bound_search",
    "item_of",
    "levers_of",
    "searched",
]

#: flags that bound the batch in requests (vLLM, SGLang and the sim), each with why its values
#: ≥ C act alike at a closed-loop point of C users
BATCH_BOUNDS: dict[str, str] = {
    "--max-num-seqs": "a running cap ≥ {c} cannot bind at {at}",
    "--max-running-requests": "a running cap ≥ {c} cannot bind at {at}",
    "--cuda-graph-max-bs": "a CUDA-graph batch bound ≥ {c} captures every batch at {at}",
}


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
    #: below ``1 + min_effect`` alone, kept because pruned with the others it would not be: the
    #: joint bound it would have made
    joint: float | None = None
    #: the lever kinds the bound comes from
    kinds: tuple[str, ...] = ()
    #: values that cannot differ at the point, taken out (a running cap's above it): what
    #: the searched dimension becomes (``{"values": [...]}`` or ``{"high": C}``), and why
    narrowed: dict[str, Any] | None = None
    note: str = ""

    def why(self, at: str) -> str:
        if self.note:
            return self.note if self.pruned else f"{self._why(at)}; {self.note}"
        return self._why(at)

    def _why(self, at: str) -> str:
        if not self.rules:
            return "no lever rule explains it: searched without a bound"
        if not self.levers:
            return f"{', '.join(self.rules)}: no bound from the baseline's evidence: searched"
        if self.high is None:
            return f"{', '.join(self.levers)}: no bound at {at}: searched"
        verb = "pruned" if self.pruned else "searched"
        if self.joint is not None:
            verb = f"searched (pruned with the others, ≤ {speedup_text(self.joint)} together)"
        return f"{', '.join(self.levers)}: ≤ {speedup_text(self.high)} at {at}: {verb}"


def levers_of(store: Store, campaign: str, config: str) -> list[Lever]:
    """``config``'s levers as ``inferlab levers`` ranks them ([] when it cannot)."""
    try:
        opts = LeverOptions(config=config)
        return list(decide(store, campaign, opts, check=False).levers.get(config, []))
    except ConfigError:
        return []


def bound_dims(
    dims: Sequence[SearchDim], levers: Sequence[Lever], at: str, min_effect: float
) -> list[DimBound]:
    """Each dimension's bound from the baseline's ranked ``levers`` at load point ``at``,
    pruned by their joint bound, and a batch bound's values that act alike at ``at`` made one
    (see the module docstring)."""
    out = [_at_most_c(d, _bound(d, levers, at), at) for d in dims]
    limit = 1.0 + min_effect
    shares: dict[str, float] = {}  # lever kind → its share of the step, of the pruned dims
    order = sorted(
        (i for i, b in enumerate(out) if b.high is not None and not math.isinf(b.high)),
        key=lambda i: out[i].high or 0.0,
    )
    for i in order:
        b = out[i]
        assert b.high is not None
        if b.high >= limit:
            break
        mine = dict.fromkeys(b.kinds, 1.0 - 1.0 / b.high)
        joint = 1.0 / max(1e-9, 1.0 - sum({**shares, **mine}.values()))
        if joint < limit:
            shares = {**shares, **{k: max(v, shares.get(k, 0.0)) for k, v in mine.items()}}
            out[i] = replace(b, pruned=True)
        else:
            out[i] = replace(b, joint=joint)
    return out


def bound_search(
    store: Store, section: SearchSection, campaign: str, base: str, at: str
) -> tuple[list[DimBound], dict[str, str], tuple[SearchDim, ...]]:
    """Each dimension's bound at ``at`` from the baseline's stored levers (``bound_dims``),
    why each pruned one was, and the dimensions left to search."""
    bounds = bound_dims(section.dim, levers_of(store, campaign, base), at, section.min_effect)
    return bounds, {b.key: b.why(at) for b in bounds if b.pruned}, searched(section.dim, bounds)


def searched(dims: Sequence[SearchDim], bounds: Sequence[DimBound]) -> tuple[SearchDim, ...]:
    """The dimensions left to search, each narrowed as its bound says."""
    return tuple(
        d.model_copy(update=b.narrowed) if b.narrowed else d
        for d, b in zip(dims, bounds, strict=True)
        if not b.pruned
    )


def _at_most_c(d: SearchDim, b: DimBound, at: str) -> DimBound:
    """A batch bound's values ≥ C at closed-loop point ``at`` (C users) made one, or the
    dimension pruned when every value is ≥ C."""
    c = closed_concurrency(at)
    if c is None or d.flag is None or d.flag not in BATCH_BOUNDS:
        return b
    why = BATCH_BOUNDS[d.flag].format(c=c, at=at)
    if d.values is not None:
        nums = [v for v in d.values if isinstance(v, int | float) and not isinstance(v, bool)]
        over = sorted(v for v in nums if v >= c)
        if len(nums) != len(d.values) or len(over) < 2:
            return b
        if len(over) == len(nums):
            return replace(b, pruned=True, note=f"every value ≥ {c}: {why}: pruned")
        keep = [v for v in d.values if v not in over[1:]]
        dropped = ", ".join(f"{v:g}" for v in over[1:])
        note = f"{dropped} left out, the same as {over[0]:g} ({why})"
        return replace(b, narrowed={"values": keep}, note=note)
    if d.low is None or d.high is None or d.high <= c:
        return b
    if d.low >= c:
        return replace(b, pruned=True, note=f"every value ≥ {c}: {why}: pruned")
    return replace(b, narrowed={"high": c}, note=f"searched up to {c} ({why})")


def _bound(d: SearchDim, levers: Sequence[Lever], at: str) -> DimBound:
    """One dimension's own bound (not pruned yet)."""
    rules = rules_for(item_of(d))
    kinds = {r.kind for r in rules}
    mine = [lv for lv in levers if lv.kind in kinds]
    highs = [p.high for lv in mine for p in lv.points if p.label == at]
    known = [h for h in highs if h is not None]
    high = max(known) if mine and known and len(known) == len(highs) else None
    titles = tuple(dict.fromkeys(lv.title for lv in mine))
    used = tuple(dict.fromkeys(lv.kind for lv in mine))
    return DimBound(d.key, high, titles, False, tuple(r.title for r in rules), kinds=used)
