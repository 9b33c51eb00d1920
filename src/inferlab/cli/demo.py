"""``inferlab demo``: the method end to end on a real engine (vLLM CPU), or ``--sim``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from inferlab.campaign.drivers.demo import (
    EXAMPLES,
    fresh_db,
    prepare_vllm_demo,
    run_sim_campaign_demo,
    run_vllm_demo,
    run_vllm_quote_demo,
)
from inferlab.campaign.drivers.runner import CampaignResult
from inferlab.report.compare import build_comparison
from inferlab.report.compare_export import render_md
from inferlab.search.driver import optimize
from inferlab.store import Store

from .optimize import print_search
from .render import stdout_console
from .run import _Events, _report

#: the database ``demo --optimize`` writes (a fresh one each run)
OPTIMIZE_DB = Path("inferlab-out") / "optimize-vllm-cpu" / "demo.db"


def demo(
    sim: Annotated[
        bool, typer.Option("--sim", help="The seed campaign on the reference engine (~2 min)")
    ] = False,
    with_search: Annotated[
        bool,
        typer.Option(
            "--optimize",
            help="inferlab optimize on vLLM CPU: the scheduler's and n-gram's levers (~15 min)",
        ),
    ] = False,
) -> None:
    """Run the whole method on a real vLLM (CPU) campaign, end to end.

    SmolLM2-135M-Instruct (trained weights: probes with real answers) in float32, bf16 and an
    FP8 KV cache gated by distribution agreement, and n-gram speculative decoding: each launched
    twice in alternating order (up to four times while its verdict is unsettled and more
    launches could settle it), verified, measured
    at C=1 and C=8 (each point until its intervals are within ±5%), stored and reported; then
    n-gram on copy-and-edit prompts. Takes tens of minutes (the first run also builds the vLLM
    CPU environment, ~4 min, and converts SmolLM2, 1-4 min). --sim: the seed campaign of
    docs/design.md on the reference engine's timing model (SIMULATED). --optimize: `inferlab
    optimize` over vLLM CPU's running-sequence cap, step token budget, n-gram draft length and
    chunked prefill (examples/optimize-vllm-cpu.toml): a recommendation with its A/B interval
    against the default, or "nothing was shown better" with the bounds that say why."""
    err = Console(stderr=True)
    events = _Events(err, stdout_console())
    if with_search and sim:
        raise typer.BadParameter("--optimize runs on vLLM CPU; give --sim or --optimize")
    if with_search:
        _optimize(err, events)
        return
    if sim:
        intro = (
            "[bold]inferlab demo --sim[/bold]: the seed campaign on the reference engine "
            "(SIMULATED: dsv4-flash-8gpu timing model), about two minutes"
        )
        run_demo, name = run_sim_campaign_demo, "sim-dsv4"
    else:
        intro = (
            "[bold]inferlab demo[/bold]: vLLM (CPU build) serving SmolLM2-135M-Instruct (REAL "
            "weights); 4 configs × C=1,8, each launched 2-4 times, then n-gram on copy-and-edit "
            "prompts at C=1; server and client on their own CPUs. This takes tens of minutes."
        )
        run_demo, name = run_vllm_demo, "vllm-cpu"
    err.print(intro)
    try:
        result, db = run_demo(events)
    finally:
        events.progress_done()
    _finish(result, db, name)
    if not sim:  # n-gram again, on prompts it copies from (examples/vllm-cpu-quote.toml)
        try:
            quote, db = run_vllm_quote_demo(events, db=db)
        finally:
            events.progress_done()
        _finish(quote, db, "vllm-cpu-quote")


def _finish(result: CampaignResult, db: Path, campaign: str) -> None:
    con = stdout_console()
    for o in result.outcomes:
        con.print(
            f"{escape(o.config)}: {o.status}" + (f" — {escape(o.message)}" if o.message else ""),
            highlight=False,
        )
    for t in result.launches:  # each config's launches and why it stopped (the rounds)
        con.print(escape(t.line()), highlight=False, soft_wrap=True)
    with Store(db) as store:
        paths = _report(store, campaign)
        if store.runs(campaign=campaign):
            c = build_comparison(store, campaign=campaign, baseline="baseline", force=True)
            con.print("\n".join(render_md(c)[:40]), highlight=False, markup=False)
    for p in paths:
        con.print(f"report: {escape(str(p))}", highlight=False)
    con.print(f"database: {escape(str(db))}", highlight=False)
    if result.interrupted:
        raise typer.Exit(130)


def _optimize(err: Console, events: _Events) -> None:
    """``demo --optimize``: the vLLM environment, then ``inferlab optimize`` on the example
    into a fresh database, its result and its report."""
    err.print(
        "[bold]inferlab demo --optimize[/bold]: inferlab optimize on vLLM (CPU build) serving a "
        "tiny random-weight model, read at C=1; each trial beside a fresh launch of the "
        "incumbent. About 15 minutes."
    )
    try:
        prepare_vllm_demo(events)
        db = fresh_db(OPTIMIZE_DB)
        with Store(db) as store:
            result = optimize(EXAMPLES / "optimize-vllm-cpu.toml", store=store, events=events)
    finally:
        events.progress_done()
    print_search(result, simulated=False)
    with Store(db) as store:
        paths = _report(store, result.campaign)
    con = stdout_console()
    for p in paths:
        con.print(f"report: {escape(str(p))}", highlight=False)
    con.print(f"database: {escape(str(db))}", highlight=False)
