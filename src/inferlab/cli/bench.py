"""``inferlab bench``: one load sweep against a running OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from inferlab.campaign.parts.bench import bench_with_record
from inferlab.config.bench import BenchConfig
from inferlab.errors import ConfigError
from inferlab.load.bench import BenchEvents, BenchResult, LoadPoint, PointResult, point_json
from inferlab.store import db_path
from inferlab.store.export import FORMAT_VERSION

from .bench_options import CAPACITY, BenchRun, bench_config, with_flags
from .capacity import bench_capacity
from .options import (
    OUTPUT,
    RUN,
    STORE,
    AsAlias,
    AsOpt,
    CampaignOpt,
    DbOpt,
    JsonAlias,
    RayOpt,
    TableJsonFormatOpt,
    output_format,
    pick,
)
from .render import bench_table, print_turns, stdout_console

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["bench"]


class _RichEvents(BenchEvents):
    def __init__(self, console: Console, table_console: Console) -> None:
        self.console = console
        self.table_console = table_console
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[red]{task.fields[errors]} err"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self.task: Any = None

    def message(self, text: str) -> None:
        self.console.print(f"[dim]{escape(text)}[/dim]", highlight=False)

    def point_started(self, point: LoadPoint, total: int | None, warmup: bool) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
        else:
            self.bar.start()
        desc = f"{point.label}{' warmup' if warmup else ''}"
        self.task = self.bar.add_task(desc, total=total, errors=0)

    def progress_done(self) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
            self.task = None
        self.bar.stop()

    def progress(self, done: int, errors: int) -> None:
        if self.task is not None:
            self.bar.update(self.task, completed=done, errors=errors)

    def point_finished(self, result: PointResult) -> None:
        s = result.summary
        mark = "[green]✓[/green]" if s.ok or not s.requests else "[red]✗[/red]"  # none succeeded
        self.console.print(
            f"{mark} {escape(result.point.label)}: {s.ok} ok, "
            f"{s.requests - s.ok} failed, "
            f"{s.output_tok_s:,.1f} output tok/s",
            highlight=False,
        )
        if result.stop is not None:
            st = result.stop
            hw = ", ".join(f"{k} ±{v:.1%}" for k, v in st.half_width.items() if v is not None)
            look = f", look {st.look}/{st.looks}" if st.look else ""
            self.console.print(
                f"  [dim]stopped: {escape(st.reason)}{look} after {st.requests} requests "
                f"({hw})[/dim]",
                highlight=False,
            )
        for w in result.warnings:
            self.console.print(
                f"[yellow]warning[/yellow] ({w.kind}): {escape(w.message)}", highlight=False
            )
            self.console.print(f"  [dim]fix:[/dim] {escape(w.fix)}", highlight=False)
        if result.trust.issues:
            self.console.print(
                f"[red]{escape(result.trust.label)}[/red]: this point carries no verdict",
                highlight=False,
            )


def _bench(**o: Any) -> None:
    """Measure a running endpoint across concurrency levels, request rates or a trace.

    Closed loop at each --concurrency, open loop at each --rate, the requests of --trace at
    their timestamps, conversations at each --sessions; prints the table and stores every
    request (--out: also as JSONL); --ray: the load comes from Ray client nodes.
    """
    cfg = bench_config(o)
    run = BenchRun(
        out=o["out"],
        db=None if o["no_db"] else db_path(o["db"]),
        campaign=o["campaign"],
        config=pick(o["as_"], o["config_alias"], "--config", "--as"),
        format=output_format(o["format_"], o["json_alias"]),
        ray=o["ray"],
        clients=o["clients"],
        capacity=o["capacity"],
        capacity_rate=o["capacity_rate"],
        rate_step=o["rate_step"],
    )
    _run(cfg, run, o["db"])


def _options(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Also write raw records + summaries here (JSONL)",
            rich_help_panel=OUTPUT,
        ),
    ] = None,
    format_: TableJsonFormatOpt = "table",
    json_alias: JsonAlias = False,
    db: DbOpt = None,
    no_db: Annotated[
        bool, typer.Option("--no-db", help="Do not store the results", rich_help_panel=STORE)
    ] = False,
    campaign: CampaignOpt = "bench",
    as_: AsOpt = None,
    config_alias: AsAlias = None,
    ray: RayOpt = None,
    clients: Annotated[
        int | None,
        typer.Option(
            "--clients",
            help="With --ray: client nodes sharing the load (default 1)",
            rich_help_panel=RUN,
        ),
    ] = None,
    capacity: Annotated[
        int | None,
        typer.Option(
            "--capacity",
            metavar="UP_TO",
            rich_help_panel=CAPACITY,
            help="Find the highest concurrency ≤ UP_TO at which --slo holds (bisection from "
            "--concurrency's first value)",
        ),
    ] = None,
    capacity_rate: Annotated[
        float | None,
        typer.Option(
            "--capacity-rate",
            metavar="UP_TO",
            rich_help_panel=CAPACITY,
            help="Find the highest request rate ≤ UP_TO req/s (open loop) at which --slo holds, "
            "to one --rate-step (bisection from --rate's first value, else one step)",
        ),
    ] = None,
    rate_step: Annotated[
        float | None,
        typer.Option(
            "--rate-step",
            metavar="REQ_S",
            rich_help_panel=CAPACITY,
            help="--capacity-rate: the resolution, req/s (default: UP_TO / 32)",
        ),
    ] = None,
) -> None:
    """The options of ``bench`` that are not the sweep's (those are ``bench_options.FLAGS``)."""


#: the command: FLAGS' options (generated from the sweep's model), then ``_options``'
bench = with_flags(_bench, _options)


def _run(cfg: BenchConfig, run: BenchRun, db: Path | None) -> None:
    """``bench``: measure, print, store (``db``: ``--db`` as given, for the line saying where)."""
    err = Console(stderr=True)
    table_console = err if run.as_json else stdout_console()
    events = _RichEvents(err, table_console)
    if run.capacity is not None or run.capacity_rate is not None or run.rate_step is not None:
        return bench_capacity(cfg, events, run, table_console)
    try:
        result, run_ids = _measure(cfg, events, run)
    finally:
        events.progress_done()
    table_console.print(bench_table(result))
    print_turns(table_console, result)
    _where(err, run.out, run_ids, db_path(db), run.campaign)
    if run.as_json:
        sys.stdout.write(json.dumps(_json(result, run_ids), indent=2, allow_nan=False) + "\n")
    if result.interrupted:
        err.print("[yellow]interrupted: what was measured is shown and written[/yellow]")
        raise typer.Exit(130)


def _measure(cfg: BenchConfig, events: BenchEvents, run: BenchRun) -> tuple[BenchResult, list[int]]:
    """The sweep from this host, or from ``--clients`` client nodes of the Ray cluster at
    ``--ray``; stored unless ``--no-db``."""
    if run.clients is not None and run.ray is None:
        raise ConfigError("--clients: needs --ray ADDRESS (the cluster with the client nodes)")
    where: dict[str, Any] = {
        "out": run.out,
        "db": run.db,
        "campaign": run.campaign,
        "config": run.config,
    }
    if run.ray is None:
        return bench_with_record(cfg, events, **where)
    from inferlab.cluster.bench import bench_ray

    return bench_ray(cfg, address=run.ray, clients=run.clients or 1, events=events, **where)


def _where(err: Console, out: Path | None, run_ids: list[int], db: Path, campaign: str) -> None:
    if out is not None:
        err.print(f"[dim]raw records and summaries written to {escape(str(out))}[/dim]")
    if run_ids:
        err.print(
            f"[dim]stored as runs {run_ids[0]}–{run_ids[-1]} in {escape(str(db))} "
            f"(campaign {escape(campaign)})[/dim]"
        )


def _json(result: BenchResult, run_ids: list[int]) -> dict[str, JsonValue]:
    return {
        "format_version": FORMAT_VERSION,
        "run_id": result.run_id,
        "stored_runs": list(run_ids),
        "model": result.model,
        "url": result.url,
        "interrupted": result.interrupted,
        "points": [point_json(p) for p in result.points],
    }
