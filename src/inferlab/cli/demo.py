"""``inferlab demo``: the embedded default run (reference engine + bench sweep)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from inferlab.campaign.demo import run_sim_demo

from .bench import _RichEvents
from .render import bench_table, stdout_console


def demo(
    out: Annotated[Path | None, typer.Option(help="Write raw records (JSONL)")] = None,
) -> None:
    """Start the SIMULATED reference engine, sweep it at C=1,8,32 and print the table."""
    err = Console(stderr=True)
    err.print(
        "[bold]inferlab demo[/bold]: measuring the reference engine (SIMULATED: 40 ms TTFT, "
        "8 ms/token, 2 tokens per event after the first)"
    )
    events = _RichEvents(err, stdout_console())
    try:
        result = run_sim_demo(events, out=out)
    finally:
        events.progress_done()
    stdout_console().print(bench_table(result))
    if result.interrupted:
        raise typer.Exit(130)
