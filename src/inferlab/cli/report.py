"""``inferlab report``: a campaign's Markdown and self-contained HTML report, from the store."""

from __future__ import annotations

from typing import Annotated

import typer

from inferlab.report.render import write_report

from .options import CampaignArg, DbOpt, OutDirAlias, OutDirOpt, pick
from .store import _open


def report(
    campaign: CampaignArg,
    db: DbOpt = None,
    out_dir: OutDirOpt = None,
    out_alias: OutDirAlias = None,
    baseline: Annotated[str | None, typer.Option(help="Baseline config (default: first)")] = None,
) -> None:
    """Write report.md and report.html for a campaign, from the store only.

    Into --out-dir (default inferlab-out/CAMPAIGN/); the HTML is one offline file (inline CSS
    and SVG charts); prints the two paths."""
    out = pick(out_dir, out_alias, "--out", "--out-dir")
    with _open(db) as store:
        md, html = write_report(store, campaign, out, baseline=baseline)
    typer.echo(str(md))
    typer.echo(str(html))
