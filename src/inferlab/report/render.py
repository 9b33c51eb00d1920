"""``inferlab report``: a campaign's Markdown and self-contained HTML report, from the store.

The HTML opens offline: CSS inline, charts as inline SVG, no script, no external resource.
Every text that came from a server, a config or a log is escaped (``html.escape``) in both
formats; numbers carry their definitions (docs/metrics.md). One report model
(``report.data.Report``), two renderers over it: ``report.markdown`` and ``report.html_page``
(sharing ``report.page``); this module writes both files."""

from __future__ import annotations

import re
from pathlib import Path

from inferlab.report.data import Report, build_report
from inferlab.report.html_page import render_html
from inferlab.report.markdown import render_markdown
from inferlab.store import Store

__all__ = ["Report", "build_report", "render_html", "render_markdown", "write_report"]


def default_out_dir(campaign: str) -> Path:
    """``inferlab-out/CAMPAIGN/`` (unsafe path characters replaced by ``_``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", campaign).strip("._")
    return Path("inferlab-out") / (safe or "campaign")


def write_report(
    store: Store, campaign: str, out_dir: Path | None = None, *, baseline: str | None = None
) -> tuple[Path, Path]:
    """Build the report and write ``report.md`` and ``report.html``; returns their paths."""
    report = build_report(store, campaign, baseline=baseline)
    d = out_dir if out_dir is not None else default_out_dir(campaign)
    d.mkdir(parents=True, exist_ok=True)
    md, html = d / "report.md", d / "report.html"
    md.write_text(render_markdown(report), encoding="utf-8")
    html.write_text(render_html(report), encoding="utf-8")
    return md, html
