"""The baseline recheck judged: did the baseline drift between its first pass and its recheck?
The two passes (the recheck measured after every other config, ``[load] recheck_baseline``;
read back by ``store.recheck``) are compared at each load point on each primary metric of
``METRICS`` with the A/B's own machinery (``stats.groups.group_verdict``, the same ``alpha``
and ``min_effect``).

A point where any of them moved beyond ``min_effect`` *drifted* (an order effect, machine
load, thermal state, warm caches): the baseline itself is not what the candidates were measured
against, so a candidate's verdict there stands only when it reads the same against the recheck
(``report.recheck``). The raw runs stay as they are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inferlab.stats.groups import TrialGroup, group_value, group_verdict
from inferlab.stats.launches import Launches
from inferlab.stats.metrics import METRICS, listed
from inferlab.stats.verdict import Verdict

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["RecheckPoint", "recheck_point", "recheck_points"]


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
    again: TrialGroup | None = field(default=None, repr=False)

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

    def to_json(self) -> dict[str, JsonValue]:
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


def recheck_point(
    label: str,
    first: TrialGroup,
    again: TrialGroup,
    *,
    alpha: float,
    min_effect: float,
    launch: Launches | None = None,
) -> RecheckPoint:
    """The baseline at ``label``: its recheck ``again`` against its first pass ``first`` on
    each primary metric; drift not assessed when a trial of either side is untrusted.
    ``launch``: the campaign's launches; the spread of the others (these two left out) is
    counted (each pass is one launch): drift is then a move beyond what another launch reads."""
    p = RecheckPoint(label, group_value("output_tok_s", first), group_value("output_tok_s", again))
    both = [*first.runs, *again.runs]
    p.simulated = any(r.environment.get("engine_name") == "sim" for r in both)
    if any(r.trust == "untrusted" for r in both):
        side = "recheck" if any(r.trust == "untrusted" for r in again.runs) else "first pass"
        p.untrusted = f"{side} untrusted (client lag or an unusable point)"
        return p
    p.again = again
    for m in listed(lambda m: m.primary):
        spread = launch.spread(label, m.name, [r.id for r in both]) if launch else None
        p.verdicts[m.name] = group_verdict(
            m.name, first, again, alpha=alpha, min_effect=min_effect, launch=spread
        )
    return p


def recheck_points(
    pairs: Iterable[tuple[str, TrialGroup, TrialGroup]],
    *,
    alpha: float = 0.05,
    min_effect: float = 0.02,
    launch: Launches | None = None,
) -> list[RecheckPoint]:
    """Each rechecked load point judged (``recheck_point``), from (label, first pass, recheck)
    as ``store.recheck.recheck_groups`` reads them."""
    return [
        recheck_point(lb, a, b, alpha=alpha, min_effect=min_effect, launch=launch)
        for lb, a, b in pairs
    ]
