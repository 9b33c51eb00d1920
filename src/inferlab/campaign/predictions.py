"""Predictions made while a campaign runs: after each measured config, ``inferlab levers``'
rules run over what is stored so far and any new or changed prediction is stored with the time
it was made — so a later config's measurement can be checked against a prediction that
preceded it."""

from __future__ import annotations

from inferlab.errors import InferlabError
from inferlab.levers import record_predictions
from inferlab.load.bench import BenchEvents
from inferlab.store import Store

__all__ = ["predict_now"]


def predict_now(store: Store, campaign: str, events: BenchEvents) -> int:
    """Store the campaign's new predictions; returns how many. A failure is a message, never
    the end of the campaign."""
    try:
        new = record_predictions(store, campaign)
    except InferlabError as exc:
        events.message(f"predictions skipped: {exc}")
        return 0
    if new:
        keys = ", ".join(str(d["key"]) for d in new)
        events.message(f"stored {len(new)} prediction(s) (inferlab levers {campaign}): {keys}")
    return len(new)
