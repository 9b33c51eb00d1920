"""``inferlab demo``: the method end to end on a real engine (vLLM CPU), or ``--sim``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from inferlab.campaign.demo import run_sim_demo, run_vllm_demo
from inferlab.store import Store

from .bench import _RichEvents
from .render import bench_table, stdout_console
from .run import _Events, _report


def demo(
    sim: Annotated[
        bool, typer.Option("--sim", help="The reference engine instead (seconds)")
    ] = False,
    out: Annotated[Path | None, typer.Option(help="--sim: write raw records (JSONL)")] = None,
) -> None:
    """The main job on the embedded default: a real vLLM (CPU) campaign — baseline, n-gram
    speculative decoding, the same with Intel OpenMP preloaded, --max-num-seqs 4 — launched,
    verified, measured at C=1,4,8, stored and reported. Takes several minutes (the first run
    also builds the vLLM CPU environment, ~4 min)."""
    err = Console(stderr=True)
    if sim:
        err.print(
            "[bold]inferlab demo --sim[/bold]: the reference engine (SIMULATED: 40 ms "
            "TTFT, 8 ms/token, 2 tokens per event after the first)"
        )
        events = _RichEvents(err, stdout_console())
        try:
            result = run_sim_demo(events, out=out)
        finally:
            events.progress_done()
        stdout_console().print(bench_table(result))
        if result.interrupted:
            raise typer.Exit(130)
        return
    err.print(
        "[bold]inferlab demo[/bold]: vLLM (CPU build) serving a tiny random-weight model; "
        "4 configs × C=1,4,8. This takes several minutes."
    )
    cevents = _Events(err, stdout_console())
    try:
        result_c, db = run_vllm_demo(cevents)
    finally:
        cevents.progress_done()
    con = stdout_console()
    for o in result_c.outcomes:
        con.print(
            f"{escape(o.config)}: {o.status}" + (f" — {escape(o.message)}" if o.message else ""),
            highlight=False,
        )
    with Store(db) as store:
        paths = _report(store, "vllm-cpu")
        from inferlab.report.compare import build_comparison, render_md

        if store.runs(campaign="vllm-cpu"):
            c = build_comparison(store, campaign="vllm-cpu", baseline="baseline", force=True)
            con.print("\n".join(render_md(c)), highlight=False, markup=False)
    for p in paths:
        con.print(f"report: {escape(str(p))}", highlight=False)
    con.print(f"database: {escape(str(db))}", highlight=False)
    if result_c.interrupted:
        raise typer.Exit(130)
