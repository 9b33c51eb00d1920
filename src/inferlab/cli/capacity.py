"""``inferlab bench --capacity UP_TO`` / ``--capacity-rate UP_TO``: capacity at SLO over
concurrency or request rate, a thin adapter over ``campaign.parts.capacity.find_capacity``."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from inferlab.config.bench import BenchConfig
from inferlab.errors import ConfigError
from inferlab.store.export import FORMAT_VERSION

from .render import fmt

if TYPE_CHECKING:
    from .bench_options import BenchRun

if TYPE_CHECKING:
    from inferlab.campaign.parts.capacity import CapacityResult

__all__ = ["bench_capacity", "capacity_table"]


def capacity_table(res: CapacityResult) -> Table:
    """One row per probe, in the order measured."""
    sim = "SIMULATED " if res.simulated else ""
    t = Table(
        title=f"{sim}capacity at SLO {res.slo}",
        caption="margin: the largest percentile/limit ratio (≤ 1: within the SLO)",
        caption_justify="left",
    )
    point = "C" if res.ladder.unit == "concurrency" else "req/s"
    for col in (point, "SLO", "margin", "goodput", "requests", "stop"):
        t.add_column(col, justify="left" if col in ("SLO", "stop") else "right")
    for p in res.probes:
        t.add_row(
            f"{p.point:g}",
            p.state + ("" if p.trusted else " (untrusted)"),
            fmt(p.margin, 3),
            f"{fmt(p.goodput * 100, 0)}%",
            str(p.requests),
            p.stop or "count",
        )
    return t


def bench_capacity(cfg: BenchConfig, events: Any, run: BenchRun, console: Console) -> None:
    """Search (``--capacity UP_TO`` over concurrency, ``--capacity-rate UP_TO`` over request
    rate, one ``--rate-step`` apart), print the probes and the capacity (``--format json``:
    the result as JSON)."""
    from inferlab.campaign.parts.bench import Recording
    from inferlab.campaign.parts.capacity import (  # scipy.optimize
        CONCURRENCY,
        Ladder,
        check_capacity,
        find_capacity,
    )

    opt = "--capacity" if run.capacity_rate is None else "--capacity-rate"
    if run.capacity is not None and run.capacity_rate is not None:
        raise ConfigError("--capacity and --capacity-rate: give one (concurrency or rate)")
    if run.ray is not None:
        raise ConfigError(f"{opt}: runs from this host; give no --ray")
    if run.capacity_rate is None:
        if run.rate_step is not None or run.capacity is None:
            raise ConfigError("--rate-step: only with --capacity-rate")
        up_to, ladder = float(run.capacity), CONCURRENCY
    else:
        up_to = float(run.capacity_rate)
        ladder = Ladder.rates(up_to, run.rate_step)
    check_capacity(cfg, up_to, ladder)
    try:
        res, run_ids = find_capacity(
            cfg,
            up_to,
            ladder=ladder,
            events=events,
            record=Recording(run.db, run.campaign, run.config),
        )
    finally:
        events.progress_done()
    console.print(capacity_table(res))
    err = Console(stderr=True)
    (console if not run.as_json else err).print(res.sentence, highlight=False)
    if run_ids:
        err.print(f"[dim]stored as runs {run_ids[0]}–{run_ids[-1]} and a capacity analysis[/dim]")
    if run.as_json:
        doc = {"format_version": FORMAT_VERSION, "stored_runs": run_ids, "capacity": res.to_json()}
        sys.stdout.write(json.dumps(doc, indent=2, allow_nan=False) + "\n")
