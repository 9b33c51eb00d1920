"""Predicted vs measured: for every measured config whose change from its closest measured
config is explained by lever rules, the lever's prediction at each load point next to the
measured TPOT speed-up (with its 95% interval) and a verdict.

Verdicts (speed-ups are reference TPOT / config TPOT):

* ``above``: the whole interval lies above the ceiling — impossible by Amdahl (or above the
  optimistic end of a band): a measurement or attribution problem, and the suspects are named;
* ``below``: the whole interval lies below the bound's "at 2×" speed-up (the lever's share got
  less than 2× faster; how much of the ceiling it bought is said: normal for a bound) or below
  the pessimistic end of a band;
* ``consistent``: otherwise (a bound: between its share 2× faster and free).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from inferlab.config.pattern import ClosedLoop
from inferlab.engines import get_engine
from inferlab.engines.flags import diff as flag_diff
from inferlab.errors import InferlabError
from inferlab.stats.verdict import compare_samples
from inferlab.store.models import PredictedPoint, StoredPrediction

from .evidence import ConfigEvidence, Evidence, SweepPoint
from .host import kernel_bound
from .model import LeverOptions
from .registry import RULES, rules_for

__all__ = [
    "Measured",
    "PredictionRow",
    "at_2x",
    "closest_reference",
    "diff_items",
    "judge",
    "preceded",
    "predict_rows",
]

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"


def diff_items(a: ConfigEvidence, b: ConfigEvidence) -> list[str]:
    """What changes from config ``a`` to ``b``: ``flag --x``, ``env NAME``, ``files KIND``,
    ``tune KIND``, ``extra KEY``, ``engine``, ``model`` (flags folded by ``b``'s engine's
    spelling)."""
    out = ["engine"] if a.engine != b.engine else []
    try:
        changes = get_engine(b.engine or "openai").diff(a.argv, b.argv)
    except InferlabError:
        changes = flag_diff(a.argv, b.argv)
    out += [f"flag {c.flag}" for c in changes]
    out += [f"env {k}" for k in sorted(set(a.env) | set(b.env)) if a.env.get(k) != b.env.get(k)]
    for section in ("files", "tune"):  # one item per kernel kind: a tuned file installed
        fa, fb = a.extra.get(section) or {}, b.extra.get(section) or {}
        if isinstance(fa, dict) and isinstance(fb, dict):
            keys = sorted(set(fa) | set(fb))
            out += [f"{section} {k}" for k in keys if fa.get(k) != fb.get(k)]
    for k in sorted((set(a.extra) | set(b.extra)) - {"files", "tune"}):
        if a.extra.get(k) != b.extra.get(k):
            out.append(f"extra {k}")
    return out


def closest_reference(ev: Evidence, cand: ConfigEvidence) -> tuple[str, list[str]] | None:
    """The measured config before ``cand`` (store order: the campaign file's) nearest it —
    fewest changes, then fewest unexplained ones, then the earliest — and the changes; None
    when no earlier config was measured. A lever is what a later config adds."""
    best: tuple[tuple[int, int, int], str, list[str]] | None = None
    for i, ref in enumerate(ev.configs.values()):
        if ref.name == cand.name:
            break
        if not ref.sweep:
            continue
        items = diff_items(ref, cand)
        if not items:
            continue
        score = (len(items), sum(1 for x in items if not rules_for(x)), i)
        if best is None or score < best[0]:
            best = (score, ref.name, items)
    return None if best is None else (best[1], best[2])


@dataclass(frozen=True)
class Measured:
    """TPOT speed-up reference / config (median ratio, bootstrap 95% interval)."""

    estimate: float
    low: float
    high: float


def at_2x(bound: float) -> float:
    """The speed-up of the same share made 2× faster instead of free: ``1/(1 − s/2)`` for the
    bound ``1/(1 − s)`` (what ``inferlab profile`` shows as "at 2×")."""
    if not math.isfinite(bound):
        return 2.0
    return 1.0 / (1.0 - (1.0 - 1.0 / bound) / 2.0)


def judge(low: float | None, high: float | None, m: Measured) -> tuple[str, str]:
    """(verdict, sentence) of a measured speed-up against a bound (``low`` None) or a band.

    A bound is met (``consistent``) by a lever whose kernels became at least 2× faster — the
    interval reaches ``at_2x(high)`` — and ``below`` when the whole interval is short of that."""
    x = f"×{m.estimate:.3f} [{m.low:.3f}, {m.high:.3f}]"
    if high is not None and m.low > high:
        what = "the bound" if low is None else "the band's optimistic end"
        return "above", f"measured {x} is above {what} ×{high:.3f}: impossible by Amdahl"
    if low is None and high is not None:
        got = (m.estimate - 1) / (high - 1) if high > 1 and math.isfinite(high) else 0.0
        if m.high < at_2x(high):
            return "below", (
                f"measured {x} is below the bound ×{high:.3f} and its ×{at_2x(high):.3f} at 2×: "
                f"the lever bought {got:.0%} of its ceiling (normal for a bound)"
            )
        if m.estimate >= high:
            return "consistent", f"measured {x} reaches the bound ×{high:.3f} within its interval"
        return "consistent", (
            f"measured {x} within the bound ×{high:.3f}: the lever bought {got:.0%} of its "
            "ceiling (its share at least 2× faster)"
        )
    if low is not None and m.high < low:
        return (
            "below",
            f"measured {x} is {1 - m.estimate / low:.1%} below the band's low ×{low:.3f}",
        )
    return "consistent", f"measured {x} within the prediction"


def preceded(made_at: str | None, measured_at: str | None) -> bool | None:
    """True when the prediction was stored before the measurement began (1 s resolution)."""
    if not made_at or not measured_at:
        return None
    try:
        return datetime.strptime(made_at, TIME_FORMAT) < datetime.strptime(measured_at, TIME_FORMAT)
    except ValueError:
        return None


@dataclass
class PredictionRow:
    """One lever × load point: prediction (``low`` None for a bound), measurement, verdict."""

    config: str
    reference: str
    kinds: list[str]
    label: str
    concurrency: int
    low: float | None
    high: float | None
    measured: Measured | None
    verdict: str
    detail: str
    extrapolated: bool = False
    made_at: str | None = None
    preceded: bool | None = None
    also_changed: list[str] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)  # parts computed now, not stored before

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stored_point(
    stored: Sequence[StoredPrediction], key: str, c: int, at: str | None
) -> tuple[PredictedPoint | None, str | None]:
    """(point, made_at) of the stored prediction ``key`` at C=c: the newest made before
    ``at`` (the measurement), else the oldest; (None, None) when none is stored."""
    rows = [s for s in stored if s.key == key]
    if not rows:
        return None, None
    before = [s for s in rows if preceded(s.made_at, at)]
    pick = before[-1] if before else rows[0]
    for p in pick.points:
        if p.concurrency == c:
            return p, pick.made_at
    return None, None


@dataclass(frozen=True)
class _Part:
    low: float | None
    high: float
    extrapolated: bool
    made_at: str | None


def _part(
    ev: Evidence,
    ref: ConfigEvidence,
    kind: str,
    c: int,
    stored: Sequence[StoredPrediction],
    at: str | None,
    opts: LeverOptions,
) -> _Part | None:
    """One lever's prediction for ``ref`` at C=c: the stored one (made before ``at`` when
    there is one), else computed now from the same evidence (``made_at`` None)."""
    p, made = _stored_point(stored, f"{kind}:{ref.name}", c, at)
    if p is not None and p.high is not None:
        return _Part(p.low, float(p.high), p.extrapolated, made)
    rule = RULES[kind]
    if rule.model == "amdahl" and rule.share is not None:
        prof = next((x for x in ref.profiles if x.concurrency == c), None)
        s = rule.share(prof.data) if prof is not None else None
        if s is None or prof is None:
            return None
        if rule.kernel:
            return _Part(None, kernel_bound(prof.data, s, math.inf)[1], False, None)
        return _Part(None, 1 / (1 - s) if s < 1 else math.inf, False, None)
    for lv in rule.build(ev, ref, opts):
        for q in lv.points:
            if q.concurrency == c and q.high is not None:
                return _Part(q.low, q.high, q.extrapolated, None)
    return None


def _combine(parts: Sequence[tuple[str, _Part]]) -> tuple[float | None, float]:
    """Amdahl parts act on disjoint shares (their shares add: 1/(1 − Σs)); bands multiply. An
    Amdahl part's ``low`` (the host's floor, ``levers.host``) is not a prediction: its ``high``
    is judged as a bound."""
    s = sum(1 - 1 / p.high for k, p in parts if RULES[k].model == "amdahl" and p.high > 0)
    high = 1 / (1 - s) if s < 1 else math.inf
    bands = [p for k, p in parts if RULES[k].model == "spec"]
    for p in bands:
        high *= p.high
    low = math.prod(p.low if p.low is not None else 1.0 for p in bands) if bands else None
    return low, high


def _reference_point(ev: Evidence, ref: ConfigEvidence, cand: ConfigEvidence, c: int) -> SweepPoint:
    """``ref``'s point at C=c the candidate is measured against: the baseline's nearest pass
    when it is an interleaved one (``[load] interleave``), else ``ref``'s own."""
    if ref.name == ev.baseline and c in cand.near:
        return cand.near[c][0]
    return ref.sweep[c]


def _measured(ref: SweepPoint, cand: ConfigEvidence, c: int) -> Measured | None:
    v = compare_samples("tpot_ms", ref.trials, cand.sweep[c].trials)
    r = v.ratio
    if not all(math.isfinite(x) and x > 0 for x in (r.estimate, r.low, r.high)):
        return None
    return Measured(1 / r.estimate, 1 / r.high, 1 / r.low)


def _not_applied(cand: ConfigEvidence) -> list[str]:
    """The lever-applied evidence's items that are not ``applied`` (i13's records)."""
    return [
        f"lever {i.item}: {i.status} ({i.evidence})"
        for i in cand.lever_items or []
        if i.status != "applied"
    ]


def _suspects(row: PredictionRow, ref: ConfigEvidence, cand: ConfigEvidence) -> list[str]:
    c = row.concurrency
    n_ref = sum(len(t) for t in ref.sweep[c].trials)
    n_cand = sum(len(t) for t in cand.sweep[c].trials)
    out = [
        f"noise: the interval rests on {n_ref} + {n_cand} requests in "
        f"{len(ref.sweep[c].trials)} + {len(cand.sweep[c].trials)} trials (measure again)"
    ]
    if row.also_changed:
        out.append("a second change in the diff: " + ", ".join(row.also_changed))
    if cand.lever_items is None:
        out.append(f"no lever-applied evidence stored for {cand.name}")
    out += _not_applied(cand)
    if row.extrapolated:
        out.append("the prediction is extrapolated beyond the reference's sweep")
    if any(RULES[k].model == "amdahl" for k in row.kinds):
        out.append("attribution: the lever's kernels may sit in another profile category")
    return out


def predict_rows(
    ev: Evidence, stored: Sequence[StoredPrediction], opts: LeverOptions
) -> tuple[list[PredictionRow], list[str]]:
    """Rows for every measured config a lever rule explains, and notes on what was not
    predicted (and why)."""
    rows: list[PredictionRow] = []
    notes: list[str] = []
    for cand in ev.configs.values():
        near = closest_reference(ev, cand) if cand.sweep else None
        if near is None:
            continue
        ref = ev.configs[near[0]]
        kinds = list(
            dict.fromkeys(r.kind for x in near[1] for r in rules_for(x) if r.model != "none")
        )
        if not kinds:
            notes.append(
                f"{cand.name} vs {ref.name} ({', '.join(near[1])}): no lever rule predicts it"
            )
            continue
        also = [x for x in near[1] if not any(RULES[k].explains(x) for k in kinds)]
        for c in sorted(set(cand.sweep) & set(ref.sweep)):
            rows += _rows_at(ev, ref, cand, kinds, also, c, stored, opts, notes)
    return rows, notes


def _rows_at(
    ev: Evidence,
    ref: ConfigEvidence,
    cand: ConfigEvidence,
    kinds: list[str],
    also: list[str],
    c: int,
    stored: Sequence[StoredPrediction],
    opts: LeverOptions,
    notes: list[str],
) -> list[PredictionRow]:
    against = cand.near.get(c) if ref.name == ev.baseline else None
    if c in ev.refused and against is None:  # a refused verdict is not a measurement
        notes.append(f"{cand.name} at C={c}: no measured ratio: {ev.refused[c]}")
        return []
    parts = [(k, _part(ev, ref, k, c, stored, cand.first_run_at, opts)) for k in kinds]
    missing = [k for k, p in parts if p is None]
    if missing:
        notes.append(
            f"{cand.name} at C={c}: no prediction for {', '.join(missing)} "
            f"(no profile of {ref.name} at C={c}, or no accept length)"
        )
        return []
    got = [(k, p) for k, p in parts if p is not None]
    low, high = _combine(got)
    m = _measured(_reference_point(ev, ref, cand, c), cand, c)
    if m is None:
        notes.append(f"{cand.name} at C={c}: no measured ratio (too few samples)")
        return []
    verdict, detail = judge(low, high, m)
    if against is not None:
        detail += f"; measured against {against[1]}, its nearest measurement"
    made = [p.made_at for _, p in got if p.made_at is not None]
    made_at = max(made) if made else None
    row = PredictionRow(
        config=cand.name,
        reference=ref.name,
        kinds=kinds,
        label=ClosedLoop(c).label,
        concurrency=c,
        low=low,
        high=high,
        measured=m,
        verdict=verdict,
        detail=detail,
        extrapolated=any(p.extrapolated for _, p in got),
        made_at=made_at,
        preceded=preceded(made_at, cand.sweep[c].started_at),
        also_changed=also,
        fresh=[k for k, p in got if p.made_at is None],
    )
    if verdict == "above":
        row.suspects = _suspects(row, ref, cand)
    elif _not_applied(cand):  # a lever that did not take effect explains "below" too
        row.detail += "; " + "; ".join(_not_applied(cand))
    return [row]
