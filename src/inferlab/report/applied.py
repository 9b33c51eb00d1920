"""Lever-applied evidence in the comparison and the report, read from the store.

A config whose stored ``lever`` verification has an item ``not-applied`` is still measured and
shown, but its verdict cells carry "lever not applied" and ``compare`` claims no change for it
unless ``--force`` (a change measured for a lever that did not take effect is not that lever's
change). The report gets a "Levers applied" section: each config's items with their evidence.
"""

from __future__ import annotations

from dataclasses import replace
from html import escape
from typing import Any

from inferlab.report.sections import Section, register_section
from inferlab.report.sections import md_text as _md
from inferlab.stats.verdict import Verdict
from inferlab.store import RunRow, Store

__all__ = ["LEVER_NOT_APPLIED", "lever_items", "levers_section", "not_applied", "unclaimed"]

LEVER_NOT_APPLIED = "lever not applied"
_MARK = {"applied": "✓", "not-applied": "✗"}


def lever_items(
    store: Store, campaign: str, config: str, config_hash: str | None = None
) -> list[dict[str, Any]]:
    """The newest stored lever items of a config (of that exact content, given its hash)."""
    detail = store.latest_verification(campaign, config, "lever", config_hash)
    items = detail.get("items", []) if detail else []
    return [i for i in items if isinstance(i, dict)]


def not_applied(store: Store, run: RunRow) -> list[str]:
    """The items of a run's config that did not take effect (names only)."""
    items = lever_items(store, run.campaign, run.config, run.config_hash)
    return [str(i["item"]) for i in items if i.get("status") == "not-applied"]


def unclaimed(v: Verdict, items: list[str]) -> Verdict:
    """A verdict that claims nothing because the lever behind it did not take effect."""
    if v.claim == "~":
        return v
    reason = (
        f"{LEVER_NOT_APPLIED} ({', '.join(items)}): no change is claimed for it "
        f"(it measured {v.claim}; --force claims it anyway)"
    )
    return replace(v, claim="~", reason=reason)


def _configs(store: Store, campaign: str) -> list[str]:
    return store.verified_configs(campaign, "lever")


@register_section("applied")
def levers_section(store: Store, campaign: str) -> Section | None:
    """Each config's diff against the baseline, item by item, with the evidence that it took
    effect; None when no config has a stored lever check."""
    names = _configs(store, campaign)
    if not names:
        return None
    intro = (
        "Did each lever take effect? One row per item of the config's diff against the "
        "baseline: ✓ applied, ✗ not applied (its numbers are not claimed as the lever's), "
        "? no evidence source."
    )
    md = [intro, "", "| config | item | | evidence | source |", "|---|---|---|---|---|"]
    html = [
        f'<p class="muted">{escape(intro)}</p>',
        "<table><tr><th>config</th><th>item</th><th></th><th>evidence</th><th>source</th></tr>",
    ]
    for name in names:
        for it in lever_items(store, campaign, name):
            cells = (
                name,
                it["item"],
                _MARK.get(str(it["status"]), "?"),
                it["evidence"],
                it.get("source") or "",
            )
            md.append("| " + " | ".join(_md(c) for c in cells) + " |")
            html.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    html.append("</table>")
    return Section("applied", "Levers applied", "\n".join(md), "\n".join(html))
