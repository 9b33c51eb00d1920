"""Lever-applied evidence in the comparison and the report, read from the store.

A config whose stored ``lever`` verification has an item ``not-applied`` is still measured and
shown, but its verdict cells carry "lever not applied" and ``compare`` claims no change for it
unless ``--force`` (a change measured for a lever that did not take effect is not that lever's
change). The report's "Levers applied" section (``report.sections.applied``) shows each
config's items with their evidence.
"""

from __future__ import annotations

from dataclasses import replace

from inferlab.stats.verdict import Verdict
from inferlab.store import RunRow, Store
from inferlab.store.checks import LeverCheck, LeverCheckItem

__all__ = ["LEVER_NOT_APPLIED", "lever_items", "not_applied", "unclaimed"]

LEVER_NOT_APPLIED = "lever not applied"


def lever_items(
    store: Store, campaign: str, config: str, config_hash: str | None = None
) -> list[LeverCheckItem]:
    """The newest stored lever items of a config (of that exact content, given its hash)."""
    got = store.verifications.latest_of(LeverCheck, campaign, config, "lever", config_hash)
    return list(got.items) if got is not None else []


def not_applied(store: Store, run: RunRow) -> list[str]:
    """The items of a run's config that did not take effect (names only)."""
    items = lever_items(store, run.campaign, run.config, run.config_hash)
    return [i.item for i in items if i.status == "not-applied"]


def unclaimed(v: Verdict, items: list[str]) -> Verdict:
    """A verdict that claims nothing because the lever behind it did not take effect (an
    undecided one says so too: more launches would not make it claimable)."""
    if v.claim == "~" and not v.reason.startswith("undecided:"):
        return v
    reason = (
        f"{LEVER_NOT_APPLIED} ({', '.join(items)}): no change is claimed for it "
        f"(it measured {'undecided' if v.claim == '~' else v.claim}; --force claims it anyway)"
    )
    return replace(v, claim="~", reason=reason)
