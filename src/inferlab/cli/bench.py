"""``inferlab bench``: one load sweep against a running OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal, TypeVar

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

from inferlab.campaign.parts.bench import bench_with_record
from inferlab.config.bench import (
    PREFIX_FIELDS,
    SLO,
    BenchConfig,
    WorkloadSpec,
    validation_message,
)
from inferlab.cpus import format_cpu_list, host_cpus, parse_cpu_list
from inferlab.errors import ConfigError
from inferlab.load.bench import BenchEvents, BenchResult, LoadPoint, PointResult, point_json
from inferlab.store import db_path
from inferlab.store.export import FORMAT_VERSION

from .bench_options import (
    DEFAULT,
    WORKLOAD_DEFAULT,
    ApiKeyEnvOpt,
    ArrivalOpt,
    AsJsonOpt,
    BurstinessOpt,
    CampaignOpt,
    CapacityOpt,
    CapacityRateOpt,
    ClientCpusOpt,
    ClientsOpt,
    ConcurrencyOpt,
    ConfigNameOpt,
    DurationOpt,
    EndpointOpt,
    EngineOpt,
    InputTokensOpt,
    LimitOpt,
    MaxConcurrencyOpt,
    MaxDurationOpt,
    MaxRequestsOpt,
    MinRequestsOpt,
    ModelOpt,
    NoDbOpt,
    OutOpt,
    OutputTokensOpt,
    PrecisionOpt,
    PrefixDistOpt,
    PrefixesOpt,
    PrefixTokensOpt,
    PromptsOpt,
    RateOpt,
    RateStepOpt,
    RayOpt,
    RequestsOpt,
    SeedOpt,
    SessionsOpt,
    SloOpt,
    SpeedOpt,
    StallTimeoutOpt,
    SuffixTokensOpt,
    ThinkOpt,
    TimeoutOpt,
    TokenizerOpt,
    TraceFormatOpt,
    TraceOpt,
    TraceWindowOpt,
    TrialsOpt,
    UrlOpt,
    WarmupOpt,
    WorkersOpt,
    WorkloadOpt,
    sessions_entries,
)
from .capacity import bench_capacity
from .options import DbOpt
from .render import bench_table, print_turns, stdout_console

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


def bench(
    url: UrlOpt,
    concurrency: ConcurrencyOpt = None,
    rate: RateOpt = None,
    sessions: SessionsOpt = None,
    think_s: ThinkOpt = 0.0,
    arrival: ArrivalOpt = DEFAULT["arrival"],
    burstiness: BurstinessOpt = DEFAULT["burstiness"],
    max_concurrency: MaxConcurrencyOpt = DEFAULT["max_concurrency"],
    model: ModelOpt = DEFAULT["model"],
    endpoint: EndpointOpt = DEFAULT["endpoint"],
    engine: EngineOpt = DEFAULT["engine"],
    input_tokens: InputTokensOpt = WORKLOAD_DEFAULT["input_tokens"],
    output_tokens: OutputTokensOpt = WORKLOAD_DEFAULT["output_tokens"],
    workload: WorkloadOpt = WORKLOAD_DEFAULT["kind"],
    prompts: PromptsOpt = WORKLOAD_DEFAULT["path"],
    requests: RequestsOpt = DEFAULT["requests"],
    precision: PrecisionOpt = DEFAULT["precision"],
    min_requests: MinRequestsOpt = DEFAULT["min_requests"],
    max_requests: MaxRequestsOpt = DEFAULT["max_requests"],
    max_duration: MaxDurationOpt = DEFAULT["max_duration_s"],
    client_cpus: ClientCpusOpt = DEFAULT["client_cpus"],
    duration: DurationOpt = DEFAULT["duration_s"],
    warmup: WarmupOpt = DEFAULT["warmup"],
    api_key_env: ApiKeyEnvOpt = DEFAULT["api_key_env"],
    tokenizer: TokenizerOpt = DEFAULT["tokenizer"],
    slo: SloOpt = None,
    timeout: TimeoutOpt = DEFAULT["timeout_s"],
    stall_timeout: StallTimeoutOpt = DEFAULT["stall_timeout_s"],
    workers: WorkersOpt = DEFAULT["workers"],
    seed: SeedOpt = DEFAULT["seed"],
    trials: TrialsOpt = DEFAULT["trials"],
    out: OutOpt = None,
    db: DbOpt = None,
    no_db: NoDbOpt = False,
    campaign: CampaignOpt = "bench",
    config_name: ConfigNameOpt = None,
    as_json: AsJsonOpt = False,
    ray: RayOpt = None,
    clients: ClientsOpt = None,
    capacity: CapacityOpt = None,
    capacity_rate: CapacityRateOpt = None,
    rate_step: RateStepOpt = None,
    trace: TraceOpt = DEFAULT["trace"],
    trace_format: TraceFormatOpt = DEFAULT["trace_format"],
    replay_speed: SpeedOpt = None,
    limit: LimitOpt = None,
    trace_window: TraceWindowOpt = None,
    prefixes: PrefixesOpt = WORKLOAD_DEFAULT["prefixes"],
    prefix_tokens: PrefixTokensOpt = WORKLOAD_DEFAULT["prefix_tokens"],
    suffix_tokens: SuffixTokensOpt = WORKLOAD_DEFAULT["suffix_tokens"],
    prefix_dist: PrefixDistOpt = WORKLOAD_DEFAULT["prefix_dist"],
) -> None:
    """Measure a running endpoint across concurrency levels, request rates or a trace.

    Closed loop at each --concurrency, open loop at each --rate, the requests of --trace at
    their timestamps, conversations at each --sessions; prints the table and stores every
    request (--out: also as JSONL); --ray: the load comes from Ray client nodes.
    """
    _run(dict(locals()))


def _run(o: dict[str, Any]) -> None:
    """``bench`` with its options ``o``: measure, print, store."""
    cfg = _config(o)
    as_json, out, db, campaign = o["as_json"], o["out"], o["db"], o["campaign"]
    err = Console(stderr=True)
    table_console = err if as_json else stdout_console()
    events = _RichEvents(err, table_console)
    if o["capacity"] is not None or o["capacity_rate"] is not None or o["rate_step"] is not None:
        return bench_capacity(cfg, events, o, table_console)
    try:
        result, run_ids = _measure(cfg, events, o)
    finally:
        events.progress_done()
    table_console.print(bench_table(result))
    print_turns(table_console, result)
    _where(err, out, run_ids, db_path(db), campaign)
    if as_json:
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


def _trace_fields(o: dict[str, Any]) -> dict[str, Any]:
    """The replay fields the options give (none that were not given: their defaults hold)."""
    out: dict[str, Any] = {"trace": o["trace"], "trace_format": o["trace_format"]}
    if o["replay_speed"] is not None:
        out["speed"] = _num_list(o["replay_speed"], "--speed", float)
    if o["limit"] is not None:
        out["trace_limit"] = o["limit"]
    if o["trace_window"] is not None:
        start, sep, end = o["trace_window"].partition(":")
        try:
            if not sep:
                raise ValueError
            out["trace_start_s"] = float(start) if start.strip() else 0.0
            out["trace_end_s"] = float(end) if end.strip() else None
        except ValueError:
            raise ConfigError(
                f"--trace-window: expected START:END seconds (either may be empty), "
                f"got {o['trace_window']!r}"
            ) from None
    return out


def _config(o: dict[str, Any]) -> BenchConfig:
    """The parsed options as one sweep's config; a bad value is a ``ConfigError`` naming it."""
    try:
        return BenchConfig(
            **{name: o[opt] for name, opt in _AS_GIVEN.items()},
            concurrency=_num_list(o["concurrency"], "--concurrency", int),
            rate=_num_list(o["rate"], "--rate", float),
            sessions=sessions_entries(o["sessions"], o["think_s"]),
            workload=WorkloadSpec(
                kind=o["workload"],
                input_tokens=o["input_tokens"],
                output_tokens=o["output_tokens"],
                path=o["prompts"],
                seed=o["seed"],
                **{k: o[k] for k in PREFIX_FIELDS},
            ),
            requests=_requests(o["requests"]),
            client_cpus=_client_cpus(o["client_cpus"]),
            slo=SLO.parse(o["slo"]) if o["slo"] else SLO(),
            **_trace_fields(o),
        )
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, "bench")) from None
