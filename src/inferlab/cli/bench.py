"""``inferlab bench``: one load sweep against a running OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from pydantic import ValidationError
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

from inferlab.campaign.bench import bench_with_record
from inferlab.config.bench import SLO, BenchConfig, WorkloadSpec, validation_message
from inferlab.cpus import format_cpu_list, host_cpus, parse_cpu_list
from inferlab.errors import ConfigError
from inferlab.load.bench import BenchEvents, BenchResult, LoadPoint, PointResult, point_json
from inferlab.store import db_path
from inferlab.store.export import FORMAT_VERSION

from .capacity import bench_capacity
from .options import DbOpt
from .render import bench_table, stdout_console

__all__ = ["bench"]


N = TypeVar("N", int, float)


def _num_list(text: str | None, opt: str, kind: type[N]) -> list[N]:
    """``1,8,16`` as numbers of ``kind``; ConfigError naming ``opt`` when one is not."""
    if not text:
        return []
    try:
        return [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        what = "integers" if kind is int else "numbers"
        raise ConfigError(f"{opt}: expected comma-separated {what}, got {text!r}") from None


def _requests(text: str | None) -> int | Literal["auto"] | None:
    if text is None or text.strip().lower() == "auto":
        return None if text is None else "auto"
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"--requests: expected a count or 'auto', got {text!r}") from None


def _client_cpus(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    cpus = parse_cpu_list(text, "--client-cpus")
    missing = sorted(set(cpus) - set(host_cpus()))
    if missing:
        raise ConfigError(
            f"--client-cpus: CPU {format_cpu_list(missing)} is not on this host "
            f"(it has {format_cpu_list(host_cpus())})"
        )
    return cpus


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


#: the options' defaults: the models' field defaults, stated once there (``BenchConfig``,
#: its ``LoadSpec`` fields, and the workload's)
_DEFAULT: dict[str, Any] = {n: f.default for n, f in BenchConfig.model_fields.items()}
_WORKLOAD_DEFAULT: dict[str, Any] = {n: f.default for n, f in WorkloadSpec.model_fields.items()}


_UrlOpt = Annotated[str, typer.Option("--url", help="Base URL, e.g. http://127.0.0.1:8000")]
_ConcurrencyOpt = Annotated[
    str | None, typer.Option("--concurrency", "-c", help="Closed loop: C or a list 1,8,16")
]
_RateOpt = Annotated[
    str | None, typer.Option("--rate", help="Open loop: requests/s, or a list 1,2,4")
]
_ArrivalOpt = Annotated[str, typer.Option(help="poisson | gamma")]
_BurstinessOpt = Annotated[float, typer.Option(help="gamma shape; <1 burstier")]
_MaxConcurrencyOpt = Annotated[
    int | None, typer.Option(help="Open loop: cap on requests in flight")
]
_ModelOpt = Annotated[str | None, typer.Option(help="Model name (default: first listed)")]
_EndpointOpt = Annotated[str, typer.Option(help="completions | chat")]
_EngineOpt = Annotated[
    str | None, typer.Option(help="Engine kind (exact-length fields); default: detected")
]
_InputTokensOpt = Annotated[int, typer.Option(help="Prompt length, tokens (random)")]
_OutputTokensOpt = Annotated[int, typer.Option(help="Output length, tokens")]
_WorkloadOpt = Annotated[str, typer.Option(help="random | jsonl | sharegpt")]
_PromptsOpt = Annotated[
    Path | None, typer.Option(help="Prompts file for --workload jsonl|sharegpt")
]
_RequestsOpt = Annotated[
    str | None,
    typer.Option(help="Measured requests per load point, or 'auto' (stop when precise)"),
]
_PrecisionOpt = Annotated[float, typer.Option(help="auto: stop at ±this fraction (95% interval)")]
_MinRequestsOpt = Annotated[int, typer.Option(help="auto: first check")]
_MaxRequestsOpt = Annotated[int, typer.Option(help="auto: cap (0: none)")]
_MaxDurationOpt = Annotated[float | None, typer.Option(help="auto: most seconds per load point")]
_ClientCpusOpt = Annotated[
    str | None, typer.Option(help="Pin the measuring processes to these CPUs, e.g. 6,7")
]
_DurationOpt = Annotated[
    float | None, typer.Option(help="Seconds per load point (instead of --requests)")
]
_WarmupOpt = Annotated[int, typer.Option(help="Warmup requests per point (stored, not counted)")]
_ApiKeyEnvOpt = Annotated[str | None, typer.Option(help="Environment variable holding the API key")]
_TokenizerOpt = Annotated[Path | None, typer.Option(help="Local Hugging Face tokenizer directory")]
_SloOpt = Annotated[
    str | None,
    typer.Option(
        help="e.g. ttft_ms=500,tpot_p99_ms=50 (docs/bench.md: ttft/e2e p99, tpot p50/p99, itl p99)"
    ),
]
_CapacityOpt = Annotated[
    int | None,
    typer.Option(
        "--capacity",
        metavar="UP_TO",
        help="Find the highest concurrency ≤ UP_TO at which --slo holds (bisection from "
        "--concurrency's first value)",
    ),
]
_TimeoutOpt = Annotated[float, typer.Option(help="Per-request deadline, s")]
_StallTimeoutOpt = Annotated[float, typer.Option(help="Longest silence mid-response, s")]
_WorkersOpt = Annotated[
    int | None, typer.Option(help="Measuring processes (default: 1 per 256 streams)")
]
_SeedOpt = Annotated[int, typer.Option(help="Seed for prompts and arrivals")]
_TrialsOpt = Annotated[int, typer.Option(help="Repetitions of every load point")]
_OutOpt = Annotated[Path | None, typer.Option(help="Write raw records + summaries (JSONL)")]
_NoDbOpt = Annotated[bool, typer.Option("--no-db", help="Do not store the results")]
_CampaignOpt = Annotated[str, typer.Option(help="Campaign the runs are stored under")]
_ConfigNameOpt = Annotated[
    str | None, typer.Option("--config", help="Config name (default ENGINE:MODEL)")
]
_AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print a JSON summary on stdout")]
_RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray", metavar="ADDRESS", help="Generate the load from Ray client nodes: HOST:PORT"
    ),
]
_ClientsOpt = Annotated[
    int | None,
    typer.Option("--clients", help="With --ray: client nodes sharing the load (default 1)"),
]


def bench(
    url: _UrlOpt,
    concurrency: _ConcurrencyOpt = None,
    rate: _RateOpt = None,
    arrival: _ArrivalOpt = _DEFAULT["arrival"],
    burstiness: _BurstinessOpt = _DEFAULT["burstiness"],
    max_concurrency: _MaxConcurrencyOpt = _DEFAULT["max_concurrency"],
    model: _ModelOpt = _DEFAULT["model"],
    endpoint: _EndpointOpt = _DEFAULT["endpoint"],
    engine: _EngineOpt = _DEFAULT["engine"],
    input_tokens: _InputTokensOpt = _WORKLOAD_DEFAULT["input_tokens"],
    output_tokens: _OutputTokensOpt = _WORKLOAD_DEFAULT["output_tokens"],
    workload: _WorkloadOpt = _WORKLOAD_DEFAULT["kind"],
    prompts: _PromptsOpt = _WORKLOAD_DEFAULT["path"],
    requests: _RequestsOpt = _DEFAULT["requests"],
    precision: _PrecisionOpt = _DEFAULT["precision"],
    min_requests: _MinRequestsOpt = _DEFAULT["min_requests"],
    max_requests: _MaxRequestsOpt = _DEFAULT["max_requests"],
    max_duration: _MaxDurationOpt = _DEFAULT["max_duration_s"],
    client_cpus: _ClientCpusOpt = _DEFAULT["client_cpus"],
    duration: _DurationOpt = _DEFAULT["duration_s"],
    warmup: _WarmupOpt = _DEFAULT["warmup"],
    api_key_env: _ApiKeyEnvOpt = _DEFAULT["api_key_env"],
    tokenizer: _TokenizerOpt = _DEFAULT["tokenizer"],
    slo: _SloOpt = None,
    capacity: _CapacityOpt = None,
    timeout: _TimeoutOpt = _DEFAULT["timeout_s"],
    stall_timeout: _StallTimeoutOpt = _DEFAULT["stall_timeout_s"],
    workers: _WorkersOpt = _DEFAULT["workers"],
    seed: _SeedOpt = _DEFAULT["seed"],
    trials: _TrialsOpt = _DEFAULT["trials"],
    out: _OutOpt = None,
    db: DbOpt = None,
    no_db: _NoDbOpt = False,
    campaign: _CampaignOpt = "bench",
    config_name: _ConfigNameOpt = None,
    as_json: _AsJsonOpt = False,
    ray: _RayOpt = None,
    clients: _ClientsOpt = None,
) -> None:
    """Measure a running endpoint across concurrency levels or request rates.

    Closed loop at each --concurrency or open loop at each --rate; prints the table and
    stores every request (--out: also as JSONL); --ray: the load comes from Ray client nodes.
    """
    o = dict(locals())
    cfg = _config(o)
    err = Console(stderr=True)
    table_console = err if as_json else stdout_console()
    events = _RichEvents(err, table_console)
    if capacity is not None:
        return bench_capacity(cfg, capacity, events, o, table_console)
    try:
        result, run_ids = _measure(cfg, events, o)
    finally:
        events.progress_done()
    _show(result, run_ids, o, err, table_console)


def _show(
    result: BenchResult, run_ids: list[int], o: dict[str, Any], err: Console, table: Console
) -> None:
    """The table, where the results went, ``--json``'s document; exit 130 when interrupted."""
    table.print(bench_table(result))
    _where(err, o["out"], run_ids, db_path(o["db"]), o["campaign"])
    if o["as_json"]:
        sys.stdout.write(json.dumps(_json(result, run_ids), indent=2, allow_nan=False) + "\n")
    if result.interrupted:
        err.print("[yellow]interrupted: what was measured is shown and written[/yellow]")
        raise typer.Exit(130)


def _measure(
    cfg: BenchConfig, events: BenchEvents, o: dict[str, Any]
) -> tuple[BenchResult, list[int]]:
    """The sweep from this host, or from ``--clients`` client nodes of the Ray cluster at
    ``--ray``; stored unless ``--no-db``."""
    out, campaign, config = o["out"], o["campaign"], o["config_name"]
    ray, clients = o["ray"], o["clients"]
    db = None if o["no_db"] else db_path(o["db"])
    if clients is not None and ray is None:
        raise ConfigError("--clients: needs --ray ADDRESS (the cluster with the client nodes)")
    if ray is None:
        return bench_with_record(cfg, events, out=out, db=db, campaign=campaign, config=config)
    from inferlab.cluster.bench import bench_ray

    return bench_ray(
        cfg,
        address=ray,
        clients=clients or 1,
        events=events,
        out=out,
        db=db,
        campaign=campaign,
        config=config,
    )


def _where(err: Console, out: Path | None, run_ids: list[int], db: Path, campaign: str) -> None:
    if out is not None:
        err.print(f"[dim]raw records and summaries written to {escape(str(out))}[/dim]")
    if run_ids:
        err.print(
            f"[dim]stored as runs {run_ids[0]}–{run_ids[-1]} in {escape(str(db))} "
            f"(campaign {escape(campaign)})[/dim]"
        )


def _json(result: BenchResult, run_ids: list[int]) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "run_id": result.run_id,
        "stored_runs": run_ids,
        "model": result.model,
        "url": result.url,
        "interrupted": result.interrupted,
        "points": [point_json(p) for p in result.points],
    }


#: BenchConfig field → the option whose value it takes as given
_AS_GIVEN = {
    "url": "url", "model": "model", "endpoint": "endpoint", "engine": "engine",
    "arrival": "arrival", "burstiness": "burstiness", "max_concurrency": "max_concurrency",
    "duration_s": "duration", "precision": "precision", "min_requests": "min_requests",
    "max_requests": "max_requests", "max_duration_s": "max_duration", "warmup": "warmup",
    "trials": "trials", "api_key_env": "api_key_env", "tokenizer": "tokenizer",
    "timeout_s": "timeout", "stall_timeout_s": "stall_timeout", "workers": "workers",
    "seed": "seed",
}  # fmt: skip


def _config(o: dict[str, Any]) -> BenchConfig:
    """The parsed options as one sweep's config; a bad value is a ``ConfigError`` naming it."""
    try:
        return BenchConfig(
            **{name: o[opt] for name, opt in _AS_GIVEN.items()},
            concurrency=_num_list(o["concurrency"], "--concurrency", int),
            rate=_num_list(o["rate"], "--rate", float),
            workload=WorkloadSpec(
                kind=o["workload"],
                input_tokens=o["input_tokens"],
                output_tokens=o["output_tokens"],
                path=o["prompts"],
                seed=o["seed"],
            ),
            requests=_requests(o["requests"]),
            client_cpus=_client_cpus(o["client_cpus"]),
            slo=SLO.parse(o["slo"]) if o["slo"] else SLO(),
        )
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, "bench")) from None
