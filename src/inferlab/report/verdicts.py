"""Verdicts a cell may not claim, and verdicts a sequential A/B already settled.

- A cell whose baseline or candidate point is **untrusted** (client lag over its limit, a TPOT
  median of 0, an interrupted point) gets no claim: "untrusted: client lag", with the fix.
- A cell at a load point where the **baseline recheck** found the baseline itself moved
  (``stats.recheck``) keeps a verdict only where it reads the same against the recheck; any
  other gets no claim: "not comparable: baseline drift", with both readings (``report.recheck``).
- A candidate point that was stopped by the **sequential A/B** against this baseline carries
  the decision of its last look (Lan–DeMets O'Brien–Fleming boundary, repeated 95% interval):
  that is its verdict for the primary metrics (median TPOT, output throughput), and the cell
  says which look settled it. A fixed-sample test on data that stopped early would not hold α.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from inferlab.stats.dist import t_quantile
from inferlab.stats.metrics import METRICS
from inferlab.stats.sequential import decide_look
from inferlab.stats.spread import LaunchSpread, widen
from inferlab.stats.summary import Interval
from inferlab.stats.trust import trust_from_json
from inferlab.stats.verdict import Claim, Verdict
from inferlab.store import RunRow

__all__ = [
    "claim_class",
    "claim_text",
    "group_trust",
    "num",
    "ratio_text",
    "refused_verdict",
    "relook",
    "sequential_verdict",
    "stop_text",
    "untrusted_verdict",
]


def group_trust(runs: Iterable[RunRow]) -> tuple[str | None, list[dict[str, str]]]:
    """(label, reasons) of the untrusted runs among ``runs``; (None, []) when all are trusted."""
    reasons: list[dict[str, str]] = []
    for r in runs:
        for x in r.trust_reasons if r.trust == "untrusted" else ():
            if all(x.get("reason") != y.get("reason") for y in reasons):
                reasons.append(dict(x))
    if not reasons:
        return None, []
    return trust_from_json(reasons).label, reasons


def refused_verdict(reason: str) -> Verdict:
    """No claim and no ratio, for ``reason``."""
    nan = math.nan
    return Verdict(Interval(nan, nan, nan, 0.95), None, "~", reason)


def untrusted_verdict(label: str, reasons: list[dict[str, str]], side: str) -> Verdict:
    """No claim: the reason names the problem (of the baseline or the candidate) and the fix."""
    what = "; ".join(f"{x.get('message')} — fix: {x.get('fix')}" for x in reasons)
    return refused_verdict(f"{label} ({side}): {what}")


def sequential_verdict(
    run: RunRow,
    metric: str,
    baseline: str,
    min_effect: float,
    launch: LaunchSpread | None = None,
) -> tuple[Verdict, str] | None:
    """The stored sequential decision of ``run`` for ``metric`` against ``baseline`` and the
    look that settled it ("look 2/4"); None when the run was not tested against it. With
    ``launch`` (each side one launch) other than the spread the look counted (the look saw the
    launches measured before it; the comparison sees all of them): the look decided again
    with it (``relook``)."""
    seq: Mapping[str, Any] = (run.stop or {}).get("sequential") or {}
    d = (seq.get("metrics") or {}).get(metric)
    if seq.get("baseline") != baseline or not isinstance(d, Mapping) or "ratio" not in d:
        return None
    stop = run.stop or {}
    look = f"look {stop.get('look')}/{stop.get('looks')}"
    if launch is not None and (launch.tau, launch.df) != (
        float(d.get("launch_tau") or 0.0),
        int(d.get("launch_df") or 0),
    ):
        d = relook(d, launch, METRICS[metric].higher_is_better, min_effect)
    ratio = Interval(float(d["ratio"]), float(d["low"]), float(d["high"]), 0.95)
    status = str(d.get("status"))
    z, bound = float(d["z"]), float(d["boundary"])
    counted = f"; {d['counted']}" if d.get("counted") else ""
    pct = f"{(ratio.estimate - 1) * 100:+.1f}%"
    rci = f"repeated 95% interval ×{ratio.low:.3f}…×{ratio.high:.3f}"
    if status in ("better", "worse"):
        why = f"{pct}, |z| = {abs(z):.2f} ≥ boundary {bound:.2f} ({rci}), settled at {look}"
        claim: Claim = "better" if status == "better" else "worse"
        return Verdict(ratio, None, claim, why + counted), look
    if status == "equivalent":
        why = f"equivalent: {rci} lies within ±{min_effect:.0%}, settled at {look}"
        return Verdict(ratio, None, "~", why + counted), look
    why = f"not settled by the last look ({look}): |z| = {abs(z):.2f} < {bound:.2f} ({rci})"
    return Verdict(ratio, None, "~", why + counted), look


def relook(
    d: Mapping[str, Any], launch: LaunchSpread, higher_is_better: bool, min_effect: float
) -> dict[str, Any]:
    """A stored look (``ratio``, its repeated interval ``low``–``high`` at ``boundary``, the
    spread ``launch_tau`` it counted) decided again with ``launch``: the standard
    error read back from the interval, the launch term replaced, the boundary scaled by the
    t-to-normal ratio of the widened error's degrees of freedom."""
    r, lo, hi, c = float(d["ratio"]), float(d["low"]), float(d["high"]), float(d["boundary"])
    se = math.log(hi / lo) / (2.0 * c) if lo > 0 and c > 0 else math.inf
    within = math.sqrt(max(0.0, se**2 - 2.0 * float(d.get("launch_tau") or 0.0) ** 2))
    w = widen(math.log(r), within, launch)
    z_bound = float(d.get("z_boundary") or c)  # the spending boundary, before any t scaling
    bound = z_bound * w.quantile(0.95) / t_quantile(0.975, 1e8)  # t over the normal's
    x = decide_look(
        math.log(r), w.se, bound, higher_is_better=higher_is_better, min_effect=min_effect
    )
    was = str(d.get("status"))
    counted = f"{launch.describe()} counted"
    if was != x.status:
        counted += f" (the look read {was})"
    return {
        "ratio": x.ratio,
        "low": x.low,
        "high": x.high,
        "z": x.z,
        "boundary": x.boundary,
        "status": x.status,
        "z_boundary": z_bound,
        "launch_tau": launch.tau,
        "launch_df": launch.df,
        "counted": counted,
    }


def claim_class(claim: str) -> str:
    """The CSS class of a claim in the HTML report."""
    return {"better": "better", "worse": "worse"}.get(claim, "noise")


def claim_text(verdict: Verdict, untrusted: str | None, look: str | None) -> str:
    """What a cell says after its ratio: "better", "~ within noise", "untrusted: client lag",
    "better (look 1/4)", "? undecided" (one launch each, no spread: ``stats.launch_ab``)."""
    if untrusted:
        return untrusted
    mark: str = "~ within noise" if verdict.claim == "~" else verdict.claim
    if verdict.reason.startswith("equivalent:"):
        mark = "~ equivalent"
    if verdict.reason.startswith("undecided:"):
        mark = "? undecided"
    return f"{mark} ({look})" if look else mark


def num(x: float | None, digits: int = 1) -> str:
    """A cell's value with ``digits`` decimals and thousands separators; "–" when missing."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{digits}f}"


def ratio_text(r: Interval) -> str:
    """A ratio with its interval, "×1.060 [1.020, 1.100]" ("?" for an undefined bound)."""
    lo = "?" if math.isnan(r.low) else f"{r.low:.3f}"
    hi = "?" if math.isnan(r.high) else f"{r.high:.3f}"
    return f"×{r.estimate:.3f} [{lo}, {hi}]"


def stop_text(stop: Mapping[str, Any]) -> str:
    """One adaptive point's stop record in words: reason, requests, achieved ±half-widths."""
    hw = stop.get("half_width") or {}
    names = {k: METRICS[k].title if k in METRICS else k for k in hw}
    widths = ", ".join(f"{names[k]} ±{v:.1%}" for k, v in hw.items() if v is not None)
    look = f" at look {stop['look']}/{stop['looks']}" if stop.get("look") else ""
    lag = f"; batch lag-1 r = {stop['lag1']:.2f}" if stop.get("lag1") is not None else ""
    return (
        f"{stop.get('reason')}{look} after {stop.get('requests')} requests "
        f"(+{stop.get('ramp_up', 0)} ramp-up, {stop.get('drain', 0)} drain, not counted): "
        f"{widths or 'no interval'}{lag}"
    )
