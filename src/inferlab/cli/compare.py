"""``inferlab compare``: configs × load points with noise-aware verdicts."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from inferlab.errors import ConfigError
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import (
    capacity_md,
    cell_text,
    render_csv,
    render_md,
    to_json,
)
from inferlab.report.comparison import Comparison
from inferlab.report.interleave import passes_md
from inferlab.report.recheck import recheck_md
from inferlab.stats.metrics import METRICS, listed

from .options import CampaignScopeOpt, CompareFormatOpt, DbOpt
from .render import stdout_console
from .store import _open


def _tables(c: Comparison) -> list[Table]:
    out = []
    for m in c.metrics:
        title = f"{METRICS[m].title} ({METRICS[m].unit}) — baseline {c.baseline}"
        t = Table(title=title, title_justify="left")
        t.add_column("load")
        for cfg in c.configs:
            t.add_column(escape(cfg), justify="right")
        for lb in c.labels:
            t.add_row(escape(lb), *(escape(cell_text(c, cfg, lb, m)) for cfg in c.configs))
        out.append(t)
    return out


def compare(
    selectors: Annotated[
        list[str] | None, typer.Argument(help="Run ids or config names (default: the campaign)")
    ] = None,
    db: DbOpt = None,
    campaign: CampaignScopeOpt = None,
    baseline: Annotated[str | None, typer.Option(help="Baseline config (default: first)")] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help=", ".join(m.name for m in listed(lambda m: m.compared))),
    ] = None,
    min_effect: Annotated[float, typer.Option(help="Smallest change claimed (0.02 = 2%)")] = 0.02,
    force: Annotated[bool, typer.Option(help="Compare non-comparable runs, marking cells")] = False,
    format_: CompareFormatOpt = "table",
) -> None:
    """Compare configs at each load point against the baseline.

    Values, the ratio to the baseline with its 95% interval, and a claim only when the
    difference is significant and larger than --min-effect."""
    if not 0 <= min_effect < 1:
        raise ConfigError(f"--min-effect: expected a fraction in [0, 1), got {min_effect}")
    with _open(db) as store:
        c = build_comparison(
            store,
            campaign=campaign,
            selectors=selectors or (),
            baseline=baseline,
            metrics=metric or None,
            min_effect=min_effect,
            force=force,
        )
    if format_ == "json":
        sys.stdout.write(json.dumps(to_json(c), indent=2, default=str) + "\n")
    elif format_ == "csv":
        sys.stdout.write(render_csv(c))
    elif format_ == "md":
        sys.stdout.write("\n".join(render_md(c)) + "\n")
    else:
        con = stdout_console()
        for t in _tables(c):
            con.print(t)
        for line in capacity_md(c):
            con.print(escape(line), highlight=False)
        for cfg, s in c.saturation.items():
            con.print(f"{escape(cfg)}: {escape(s.sentence)}", highlight=False)
        for line in recheck_md(c.rechecks) + passes_md(c.passes, c.passes_simulated):
            con.print(escape(line), highlight=False)
        err = Console(stderr=True)
        for cell in c.cells.values():
            for w in cell.warnings:
                err.print(
                    f"[yellow]warning[/yellow] {escape(cell.config)} {escape(cell.label)}"
                    f" ({w.kind}): {escape(w.message)}",
                    highlight=False,
                )
        if c.forced:
            err.print("[yellow]forced: cells marked ! compare non-comparable runs[/yellow]")
