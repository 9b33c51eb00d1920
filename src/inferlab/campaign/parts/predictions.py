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


def predict_now(store: Store, campaign: str, events: BenchEvents) -> bool:
    """Store the campaign's new predictions. A failure is a message, never the end of the
    campaign; returns False when Ctrl-C interrupted it (nothing stored: one transaction)."""
    try:
        new = record_predictions(store, campaign)
    except InferlabError as exc:
        events.message(f"predictions skipped: {exc}")
        return True
    except KeyboardInterrupt:
        events.message(
            "Ctrl-C while storing predictions: none stored; inferlab run --resume continues"
        )
        return False
    if new:
        keys = ", ".join(str(d["key"]) for d in new)
        events.message(f"stored {len(new)} prediction(s) (inferlab levers {campaign}): {keys}")
    return True
