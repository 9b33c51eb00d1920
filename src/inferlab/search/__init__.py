"""``inferlab optimize``: propose configs (Optuna over the ``[search]`` dimensions the levers'
bounds leave), measure each against the incumbent with a sequential A/B, accept only a
``better`` verdict, stop at the budget or when nothing is left to find."""

from .loop import (
    Bounds,
    Evaluator,
    SearchResult,
    StopReason,
    TrialRecord,
    TrialResult,
    Verdict,
    run_search,
)
from .space import Params, Space, distribution, value_text

__all__ = [
    "Bounds",
    "Evaluator",
    "Params",
    "SearchResult",
    "Space",
    "StopReason",
    "TrialRecord",
    "TrialResult",
    "Verdict",
    "distribution",
    "run_search",
    "value_text",
]
