"""The records of a search: a trial's result, a trial as stored, the dimensions' bounds, and
the words of its verdicts and its stop rules (``search.loop`` runs the search over them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inferlab.store.outcomes import TrialBody, TrialResultBody

__all__ = ["Bounds", "StopReason", "TrialRecord", "TrialResult", "Verdict"]

#: the sequential A/B's verdict on a trial against the incumbent
Verdict = Literal["better", "worse", "equivalent", "undecided"]
StopReason = Literal[
    "budget_trials",
    "budget_minutes",
    "patience",
    "exhausted",
    "repeats",
    "no_dimension",
    "bounds",
]


class TrialResult(TrialResultBody):
    """What measuring one trial gave: the objective's estimate at the search's point (its
    unit: tok/s, ms, share or concurrency) and the verdict against the incumbent; a trial that
    failed to launch or verify has ``status = "failed"`` and its classified reason. ``ab``:
    the A/B's ratios, trial / incumbent, by metric (``{"ratio", "low", "high", "status"}``);
    ``implicated``: the flags of a launch the engine refused (``LogSignature.refusal``; a
    proposal with the same values of the dimensions they name is not launched);
    ``capacity``: a capacity trial's capacity at SLO (``{"estimate", "low", "high", "unit",
    "launches"}``: the isotonic estimate and its interval, else the bisection's bracket)."""


class TrialRecord(TrialBody):
    """One trial as it is stored: its number, config name, values, result, the incumbent it was
    judged against and why it was chosen; ``bounds``: each searched dimension's Amdahl bound
    (a TPOT speed-up; None: none) when chosen; ``batch``: the number of the first trial of its
    batch (``parallel > 1``), 0: a batch of one (stored without it)."""

    result: TrialResult
    batch: int = 0


@dataclass(frozen=True)
class Bounds:
    """Each searched dimension's Amdahl bound against the current incumbent (a TPOT speed-up;
    None: no bound), and, when every one is below ``1 + min_effect``, the sentence that says
    so (the search then stops: nothing left can move the objective by the minimum effect)."""

    high: dict[str, float | None]
    nothing_left: str | None = None
