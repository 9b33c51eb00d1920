"""``inferlab levers CAMPAIGN``: levers ranked by what they can buy; predictions vs measured."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from inferlab.levers import Decision, LeverOptions, decide, record_predictions
from inferlab.levers.render import (
    PREDICTION_COLUMNS,
    SIM_NOTE,
    config_title,
    lever_details,
    prediction_cells,
)

from .options import CampaignArg, ConfigOpt, DbOpt, JsonAlias, TableJsonFormatOpt, output_format
from .render import stdout_console
from .store import _open


def _print(d: Decision, stored: int) -> None:
    con = stdout_console()
    if d.simulated:
        con.print(f"[bold magenta]{escape(SIM_NOTE)}[/bold magenta]", highlight=False)
    con.print(
        "Ceilings are TPOT speed-ups (config TPOT / TPOT with the lever): Amdahl's bound on the "
        "decode step, or a speculative-decoding band (docs/levers.md).",
        highlight=False,
    )
    if not d.levers:
        con.print("no lever to rank: no stored profile or sweep of this config", highlight=False)
    for name, levers in d.levers.items():
        con.print(f"\n[bold]{escape(config_title(d, name))}[/bold]", highlight=False)
        for i, lv in enumerate(levers, 1):
            con.print(f"{i}. {escape(lv.summary)}", highlight=False)
            for line in lever_details(lv):
                con.print(f"   [dim]{escape(line)}[/dim]", highlight=False)
    if d.predictions:
        t = Table(title="Predictions", title_justify="left")
        for c in PREDICTION_COLUMNS:
            t.add_column(c, overflow="fold")
        for r in d.predictions:
            t.add_row(*(escape(x) for x in prediction_cells(r)))
        con.print(t)
    for n in d.notes:
        con.print(f"[dim]not predicted: {escape(n)}[/dim]", highlight=False)
    if stored:
        con.print(
            f"stored {stored} new prediction(s) with the time they were made", highlight=False
        )


def levers(
    campaign: CampaignArg,
    db: DbOpt = None,
    config: ConfigOpt = None,
    format_: TableJsonFormatOpt = "table",
    json_alias: JsonAlias = False,
    accept_length: Annotated[
        float | None,
        typer.Option("--accept-length", help="τ: tokens per verify step for speculative decoding"),
    ] = None,
    draft_tokens: Annotated[
        int | None,
        typer.Option("--draft-tokens", help="k: draft tokens per step (default: from a config)"),
    ] = None,
    draft_cost: Annotated[
        float | None,
        typer.Option("--draft-cost", help="δ: one draft step's cost / one target step"),
    ] = None,
) -> None:
    """Rank each config's levers by their ceiling at every profiled load point.

    Amdahl on the decode step, speculative decoding from the baseline sweep; the predictions
    are stored with the time they were made, and the earlier ones are checked against what
    was measured since."""
    opts = LeverOptions(config, accept_length, draft_tokens, draft_cost)
    with _open(db) as store:
        d = decide(store, campaign, opts)  # raises "nothing to rank" before storing anything
        stored = record_predictions(store, campaign, opts)
    if output_format(format_, json_alias) == "json":
        out = d.to_dict()
        out["stored"] = [s["key"] for s in stored]
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
    else:
        _print(d, len(stored))
