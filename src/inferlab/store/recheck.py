"""The baseline recheck read back: the baseline's first pass and its recheck (``runs.purpose =
'recheck'``, measured after every other config, ``[load] recheck_baseline``) compared at each
load point on each primary metric of ``METRICS`` with the A/B's own machinery
(``store.groups.group_verdict``, the same ``alpha`` and ``min_effect``).

A point where any of them moved beyond ``min_effect`` *drifted* (an order effect, machine
load, thermal state, warm caches): the baseline itself is not what the candidates were measured
against, so a candidate's verdict there stands only when it reads the same against the recheck
(``report.recheck``). The raw runs stay as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from inferlab.stats.metrics import METRICS, listed
from inferlab.stats.verdict import Verdict
from inferlab.store.db import Store
from inferlab.store.groups import RunGroup, group_value, group_verdict
from inferlab.store.rows import RunRow

__all__ = ["RecheckPoint", "recheck_points"]


@dataclass
class RecheckPoint:
    """One load point of the baseline: output throughput (tok/s, mean over trials) of its first
    pass and of its recheck, and the recheck-vs-first verdict per metric."""

    label: str
    first_tok_s: float
    recheck_tok_s: float
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    untrusted: str | None = None  # a side untrusted: drift not assessed
    simulated: bool = False
    #: the recheck's runs and records (the candidates' claims are checked against them too)
    again: RunGroup | None = field(default=None, repr=False)

    @property
    def drift(self) -> bool:
        return self.untrusted is None and any(v.claim != "~" for v in self.verdicts.values())

    @property
    def shown(self) -> tuple[str, Verdict]:
        """The metric the sentences quote: the first that drifted, else output throughput."""
        moved = [(m, v) for m, v in self.verdicts.items() if v.claim != "~"]
        return (moved or list(self.verdicts.items()))[0]

    def ratio_text(self) -> str:
        """ "×0.810 [0.760, 0.860] output throughput" (recheck / first pass, 95% interval)."""
        m, v = self.shown
        r = v.ratio
        lo, hi = (("?" if math.isnan(x) else f"{x:.3f}") for x in (r.low, r.high))
        return f"×{r.estimate:.3f} [{lo}, {hi}] {METRICS[m].title}"

    def line(self) -> str:
        """The point's recheck in one sentence (definition + interval)."""
        sim = "SIMULATED " if self.simulated else ""
        if self.untrusted:
            return f"{sim}baseline rechecked at {self.label}: {self.untrusted}, drift not assessed"
        what = (
            "DRIFT: a verdict here stands only if it holds against both"
            if self.drift
            else "no drift"
        )
        return (
            f"{sim}baseline rechecked at {self.label}: {self.ratio_text()} "
            f"(recheck / first pass), {what}"
        )

    def reason(self) -> str:
        """Why a candidate verdict at this point is refused."""
        return (
            f"the baseline itself moved {self.ratio_text()} between its first pass and its "
            "recheck (order effect or drift): verdicts here are not comparable"
        )

    def to_json(self) -> dict[str, Any]:
        def nan(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "label": self.label,
            "first_output_tok_s": nan(self.first_tok_s),
            "recheck_output_tok_s": nan(self.recheck_tok_s),
            "drift": self.drift,
            "untrusted": self.untrusted,
            "simulated": self.simulated,
            "verdicts": {m: v.to_json() for m, v in self.verdicts.items()},
            "line": self.line(),
        }


def _groups(store: Store, runs: list[RunRow]) -> dict[str, RunGroup]:
    out: dict[str, RunGroup] = {}
    for r in runs:
        g = out.setdefault(r.label, RunGroup([], []))
        g.runs.append(r)
        g.records.append(store.requests(r.id))
    return out


def _point(label: str, a: RunGroup, b: RunGroup, alpha: float, min_effect: float) -> RecheckPoint:
    p = RecheckPoint(label, group_value("output_tok_s", a), group_value("output_tok_s", b))
    p.simulated = any(r.environment.get("engine_name") == "sim" for r in a.runs + b.runs)
    bad = [r for r in a.runs + b.runs if r.trust == "untrusted"]
    if bad:
        side = "recheck" if any(r.purpose == "recheck" for r in bad) else "first pass"
        p.untrusted = f"{side} untrusted (client lag or an unusable point)"
        return p
    p.again = b
    for m in listed(lambda m: m.primary):
        p.verdicts[m.name] = group_verdict(m.name, a, b, alpha=alpha, min_effect=min_effect)
    return p


def recheck_points(
    store: Store, campaign: str, baseline: str, *, alpha: float = 0.05, min_effect: float = 0.02
) -> list[RecheckPoint]:
    """The baseline's rechecked load points, in run order (none when it was not rechecked).
    Only first-pass runs of the content the recheck measured (the same config hash) count."""
    again = [
        r
        for r in store.runs(campaign=campaign, config=baseline, purpose="recheck")
        if not r.interrupted
    ]
    if not again:
        return []
    hashes = {r.config_hash for r in again}
    first = [
        r
        for r in store.runs(campaign=campaign, config=baseline)
        if not r.interrupted and r.config_hash in hashes
    ]
    a, b = _groups(store, first), _groups(store, again)
    return [_point(lb, a[lb], b[lb], alpha, min_effect) for lb in b if lb in a]
