"""Decide: rank the levers by what they can buy, predict before measuring, check after.

Pure rules over what the store holds (profiles per config and load point, log findings, recon,
the concurrency sweep, scraped counters, lever-applied evidence): ``evidence`` gathers it,
one rule per lever kind (``registry``; ``kernel_rules``, ``load_rules``) turns it into levers
with an Amdahl ceiling (``amdahl``) or a speculative-decoding band (``specdec``) per load
point, ``decide`` ranks them and stores the predictions with a timestamp, and ``predict``
checks them against what was measured later (docs/levers.md)."""

from __future__ import annotations

from .decide import NOTHING_TO_RANK, Decision, decide, rank, record_predictions, stored_predictions
from .evidence import ConfigEvidence, Evidence, gather
from .model import Lever, LeverOptions, PointBound
from .predict import Measured, PredictionRow, judge
from .registry import RULES, Rule, rule
from .specdec import SpecPoint, check_accept_length, spec_band, tpot_at

__all__ = [
    "NOTHING_TO_RANK",
    "RULES",
    "ConfigEvidence",
    "Decision",
    "Evidence",
    "Lever",
    "LeverOptions",
    "Measured",
    "PointBound",
    "PredictionRow",
    "Rule",
    "SpecPoint",
    "check_accept_length",
    "decide",
    "gather",
    "judge",
    "rank",
    "record_predictions",
    "rule",
    "spec_band",
    "stored_predictions",
    "tpot_at",
]
