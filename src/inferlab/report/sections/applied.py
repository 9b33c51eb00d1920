"""The report section "Levers applied": each config's diff against the baseline, item by
item, with the evidence that it took effect (the newest stored ``lever`` verification)."""

from __future__ import annotations

from html import escape

from inferlab.report.applied import lever_items
from inferlab.report.sections.base import Section
from inferlab.report.sections.base import md_text as _md
from inferlab.store import Store

__all__ = ["applied_section"]

_MARK = {"applied": "✓", "not-applied": "✗"}


def _configs(store: Store, campaign: str) -> list[str]:
    return store.verifications.configs(campaign, "lever")


def applied_section(store: Store, campaign: str) -> Section | None:
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
            cells = (name, it.item, _MARK.get(it.status, "?"), it.evidence, it.source or "")
            md.append("| " + " | ".join(_md(c) for c in cells) + " |")
            html.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    html.append("</table>")
    return Section("applied", "Levers applied", "\n".join(md), "\n".join(html))
