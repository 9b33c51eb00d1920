"""The report section "recon": the latest stored recon of each host of a campaign, as the same
tables ``inferlab recon`` prints."""

from __future__ import annotations

from html import escape

from inferlab.recon.tables import ReconTable, recon_tables
from inferlab.report.sections.base import Section
from inferlab.report.sections.base import md_text as _md
from inferlab.store import Store
from inferlab.store.analyses import StoredAnalysis
from inferlab.store.models import ReconBody

__all__ = ["recon_section"]


def _md_table(t: ReconTable) -> list[str]:
    out = [f"#### {_md(t.title)}", ""]
    if not t.rows:
        return [*out, f"_{_md(t.note or 'nothing')}_", ""]
    out.append("| " + " | ".join(_md(c) for c in t.columns) + " |")
    out.append("|" + "---|" * len(t.columns))
    out += ["| " + " | ".join(_md(x) for x in row) + " |" for row in t.rows]
    if t.caption:
        out += ["", f"_{_md(t.caption)}_"]
    return [*out, ""]


def _html_table(t: ReconTable) -> list[str]:
    out = [f"<h4>{escape(t.title)}</h4>"]
    if not t.rows:
        return [*out, f'<p class="muted">{escape(t.note or "nothing")}</p>']
    out.append("<table><tr>" + "".join(f"<th>{escape(c)}</th>" for c in t.columns) + "</tr>")
    for row in t.rows:
        cells = "".join(f"<td>{escape(x).replace(chr(10), '<br>')}</td>" for x in row)
        out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    if t.caption:
        out.append(f'<p class="muted">{escape(t.caption)}</p>')
    return out


def _latest_per_host(rows: list[StoredAnalysis[ReconBody]]) -> list[StoredAnalysis[ReconBody]]:
    latest = {r.name: r for r in rows}  # oldest first: later ones replace earlier ones
    return list(latest.values())


def recon_section(store: Store, campaign: str) -> Section | None:
    """The latest recon per host of ``campaign``; ``None`` when it has none."""
    rows = _latest_per_host(store.analyses.of(ReconBody, "recon", campaign))
    if not rows:
        return None
    md: list[str] = []
    html: list[str] = []
    for r in rows:
        head = f"{r.name}, {r.data.created_at or r.created_at}"
        md += [f"### Recon of {_md(head)}", ""]
        html.append(f"<h3>Recon of {escape(head)}</h3>")
        for t in recon_tables(r.data.to_json()):
            md += _md_table(t)
            html += _html_table(t)
    return Section("recon", "Environment recon", "\n".join(md), "\n".join(html))
