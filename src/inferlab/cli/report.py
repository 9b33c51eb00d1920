"""``inferlab report``: a campaign's Markdown and self-contained HTML report, from the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inferlab.report.render import write_report

from .options import DbOpt
from .store import _open


def report(
    campaign: Annotated[str, typer.Argument(help="Campaign to report on")],
    db: DbOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Directory (default inferlab-out/CAMPAIGN/)")
    ] = None,
    baseline: Annotated[str | None, typer.Option(help="Baseline config (default: first)")] = None,
) -> None:
    """Write report.md and report.html for a campaign, from the store only.

    The HTML is one offline file (inline CSS and SVG charts); prints the two paths."""
    with _open(db) as store:
        md, html = write_report(store, campaign, out, baseline=baseline)
    typer.echo(str(md))
    typer.echo(str(html))
