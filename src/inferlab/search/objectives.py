"""What a search objective reads from the store and how a trial is judged against the
incumbent's fresh measurement: one ``Objective`` row per ``[search] objective``.

- ``output_tok_s``, ``tpot_ms``: the sequential A/B's status of that metric at the point.
- ``goodput``: the share of requests that met every SLO limit at the point (``[slo]``
  needed); better or worse by Newcombe's interval of the difference of the two shares
  (``stats.goodput.compare_goodput``).
- ``capacity``: capacity at SLO (``[slo]`` with a percentile limit needed), measured on each
  server by bisection (``campaign.parts.capacity``); better or worse only when the two capacity
  intervals separate (``stats.capacity.compare_capacity``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferlab.config.bench import SLO
from inferlab.stats.goodput import compare_goodput
from inferlab.store import RunRow, Store
from inferlab.store.capacity import stored_capacities

from .loop import TrialResult, Verdict

__all__ = ["OBJECTIVES", "Objective", "capacity_result", "slo_problem"]


def _sequential(metric: str) -> Callable[[RunRow, RunRow, str], tuple[Verdict, str]]:
    def judge(run: RunRow, ref: RunRow, ref_name: str) -> tuple[Verdict, str]:
        seq = ((run.stop or {}).get("sequential") or {}).get("metrics") or {}
        status = (seq.get(metric) or {}).get("status")
        verdict: Verdict = status if status in ("better", "worse", "equivalent") else "undecided"
        return verdict, f"sequential A/B vs {ref_name}: {status or 'open'}"

    return judge


def _goodput_band(summary: dict[str, Any]) -> tuple[float, float] | None:
    g = (summary.get("slo") or {}).get("goodput") or {}
    lo, hi = g.get("low"), g.get("high")
    return (
        (float(lo), float(hi))
        if isinstance(lo, int | float) and isinstance(hi, int | float)
        else None
    )


def _goodput(run: RunRow, ref: RunRow, ref_name: str) -> tuple[Verdict, str]:
    a, b = _goodput_band(ref.summary), _goodput_band(run.summary)
    if a is None or b is None:
        return "undecided", f"no goodput interval (this run or {ref_name}): no verdict"
    ab = compare_goodput(_good_of(ref.summary), _good_of(run.summary), against=ref_name)
    return ab.verdict, ab.reason  # a test of the two proportions (stats.goodput)


def _good_of(summary: dict[str, Any]) -> tuple[int, int]:
    slo = summary.get("slo") or {}
    return int(slo.get("good") or 0), int(slo.get("requests") or 0)


def _tpot(summary: dict[str, Any]) -> Any:
    return (summary.get("tpot_ms") or {}).get("p50")


def _share(summary: dict[str, Any]) -> Any:
    return ((summary.get("slo") or {}).get("goodput") or {}).get("estimate")


@dataclass(frozen=True)
class Objective:
    """One objective: its value from a run's summary and its judge of a trial's run against
    the incumbent's (None: not read at a point, ``capacity``); ``slo``: what it needs of
    ``[slo]`` (None: nothing, ``any``: a limit, ``percentile``: a percentile limit)."""

    value: Callable[[dict[str, Any]], Any] | None
    judge: Callable[[RunRow, RunRow, str], tuple[Verdict, str]] | None
    slo: str | None = None


#: ``[search] objective`` → its row
OBJECTIVES: dict[str, Objective] = {
    "output_tok_s": Objective(lambda s: s.get("output_tok_s"), _sequential("output_tok_s")),
    "tpot_ms": Objective(_tpot, _sequential("tpot_ms")),
    "goodput": Objective(_share, _goodput, slo="any"),
    "capacity": Objective(None, None, slo="percentile"),
}


def slo_problem(objective: str, slo: SLO) -> str | None:
    """Why the campaign's ``[slo]`` cannot serve ``objective`` (None: it can)."""
    need = OBJECTIVES[objective].slo
    if need is None:
        return None
    if slo.empty:
        return f"{objective!r} needs an [slo] section (e.g. tpot_p99_ms = 50)"
    pct = [k for k in slo.limits() if "_p" in k]
    if need == "percentile" and not pct:
        return (
            f"{objective!r} needs a percentile limit in [slo] (ttft_p99_ms, tpot_p50_ms, "
            "tpot_p99_ms, e2e_p99_ms, itl_p99_ms)"
        )
    return None


def capacity_result(store: Store, campaign: str, name: str, ref: str) -> TrialResult:
    """A capacity trial against the incumbent's fresh capacity, from the stored analyses."""
    from inferlab.stats.capacity import compare_capacity

    caps = stored_capacities(store, campaign)
    if name not in caps:
        return TrialResult(status="failed", reason=f"{name}: no capacity at SLO stored")
    value = caps[name][0]
    est = value.estimate.estimate if value.estimate is not None else float(value.low)
    band = value.estimate if value.estimate is not None else None
    cap = {
        "estimate": est,
        "low": band.low if band is not None else value.low,
        "high": band.high if band is not None else value.high,
        "unit": value.unit,
        "launches": value.launches,
    }
    if ref not in caps:
        why = f"the incumbent's capacity {ref}: not measured"
        return TrialResult(status="ok", value=est, verdict="undecided", reason=why, capacity=cap)
    r = compare_capacity(caps[ref][0], value)
    verdict: Verdict = {"higher": "better", "lower": "worse"}.get(r.verdict, "undecided")  # type: ignore[assignment]
    ratio = f" ×{r.ratio.estimate:.2f}" if r.ratio is not None else ""
    why = f"capacity vs {ref}{ratio}: {r.verdict} {r.reason}".strip()
    return TrialResult(status="ok", value=est, verdict=verdict, reason=why, capacity=cap)
