"""The report section "findings": the stored findings of a campaign, per config (those the
runner mined from each launch log, and any other part of inferlab stored)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from inferlab.report.sections.base import Section
from inferlab.report.sections.base import md_text as _md
from inferlab.store import Store
from inferlab.store.analyses import StoredFinding

__all__ = ["findings_section"]

_ORDER = {"error": 0, "warning": 1, "info": 2}


def _where(f: StoredFinding) -> str:
    ev = f.evidence
    lines = ev.get("lines") if isinstance(ev, dict) else None
    src = Path(f.source).name if f.source else ""
    if lines:
        shown = ", ".join(str(x) for x in lines[:8]) + (" …" if len(lines) > 8 else "")
        return f"{src} lines {shown}".strip()
    return src


def findings_section(store: Store, campaign: str) -> Section | None:
    """Findings of ``campaign`` grouped by config, errors first; None when it has none."""
    rows = store.findings(campaign)
    if not rows:
        return None
    groups: dict[str, list[StoredFinding]] = {}
    for r in rows:
        groups.setdefault(r.config or "(campaign)", []).append(r)
    md = [
        "What the servers' own logs show (`inferlab logs analyze` on each launch log; "
        "evidence lines are 1-based in the stored log).",
        "",
    ]
    html = [
        '<p class="muted">What the servers\' own logs show (<code>inferlab logs analyze</code> '
        "on each launch log; evidence lines are 1-based in the stored log).</p>"
    ]
    for cfg, fs in groups.items():
        fs = sorted(fs, key=lambda f: (_ORDER.get(f.severity, 3), f.id))
        md += [f"### {_md(cfg)}", "", "| severity | kind | finding | evidence | action |"]
        md.append("|---|---|---|---|---|")
        html.append(f"<h3>{escape(cfg)}</h3>")
        html.append(
            "<table><tr><th>severity</th><th>kind</th><th>finding</th><th>evidence</th>"
            "<th>action</th></tr>"
        )
        for f in fs:
            cells = (f.severity, f.kind, f.message, _where(f), f.action or "")
            md.append("| " + " | ".join(_md(c) for c in cells) + " |")
            html.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
        md.append("")
        html.append("</table>")
    return Section("findings", "Log findings", "\n".join(md), "\n".join(html))
