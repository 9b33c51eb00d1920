"""The options of ``inferlab bench`` (typer aliases); their defaults are the models' own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.config.pattern import Sessions
from inferlab.errors import ConfigError

__all__ = [
    "DEFAULT",
    "WORKLOAD_DEFAULT",
    "ApiKeyEnvOpt",
    "ArrivalOpt",
    "AsJsonOpt",
    "BurstinessOpt",
    "CampaignOpt",
    "CapacityOpt",
    "CapacityRateOpt",
    "ClientCpusOpt",
    "ClientsOpt",
    "ConcurrencyOpt",
    "ConfigNameOpt",
    "DurationOpt",
    "EndpointOpt",
    "EngineOpt",
    "InputTokensOpt",
    "LimitOpt",
    "MaxConcurrencyOpt",
    "MaxDurationOpt",
    "MaxRequestsOpt",
    "MinRequestsOpt",
    "ModelOpt",
    "NoDbOpt",
    "OutOpt",
    "OutputTokensOpt",
    "PrecisionOpt",
    "PrefixDistOpt",
    "PrefixTokensOpt",
    "PrefixesOpt",
    "PromptsOpt",
    "RateOpt",
    "RateStepOpt",
    "RayOpt",
    "RequestsOpt",
    "SeedOpt",
    "SessionsOpt",
    "SloOpt",
    "SpeedOpt",
    "StallTimeoutOpt",
    "SuffixTokensOpt",
    "ThinkOpt",
    "TimeoutOpt",
    "TokenizerOpt",
    "TraceFormatOpt",
    "TraceOpt",
    "TraceWindowOpt",
    "TrialsOpt",
    "UrlOpt",
    "WarmupOpt",
    "WorkersOpt",
    "WorkloadOpt",
    "sessions_entries",
]

#: the options' defaults: the models' field defaults, stated once there (``BenchConfig``,
#: its ``LoadSpec`` fields, and the workload's)
DEFAULT: dict[str, Any] = {n: f.default for n, f in BenchConfig.model_fields.items()}
WORKLOAD_DEFAULT: dict[str, Any] = {n: f.default for n, f in WorkloadSpec.model_fields.items()}


UrlOpt = Annotated[str, typer.Option("--url", help="Base URL, e.g. http://127.0.0.1:8000")]
ConcurrencyOpt = Annotated[
    str | None, typer.Option("--concurrency", "-c", help="Closed loop: C or a list 1,8,16")
]
RateOpt = Annotated[
    str | None, typer.Option("--rate", help="Open loop: requests/s, or a list 1,2,4")
]
SessionsOpt = Annotated[
    str | None,
    typer.Option("--sessions", help="Multi-turn: USERSxTURNS conversations, or a list 4x8,16x8"),
]
ThinkOpt = Annotated[
    float, typer.Option("--think-s", help="Sessions: seconds between an answer and the next turn")
]
ArrivalOpt = Annotated[str, typer.Option(help="poisson | gamma")]
BurstinessOpt = Annotated[float, typer.Option(help="gamma shape; <1 burstier")]
MaxConcurrencyOpt = Annotated[int | None, typer.Option(help="Open loop: cap on requests in flight")]
ModelOpt = Annotated[str | None, typer.Option(help="Model name (default: first listed)")]
EndpointOpt = Annotated[str, typer.Option(help="completions | chat")]
EngineOpt = Annotated[
    str | None, typer.Option(help="Engine kind (exact-length fields); default: detected")
]
InputTokensOpt = Annotated[int, typer.Option(help="Prompt length, tokens (random)")]
OutputTokensOpt = Annotated[int, typer.Option(help="Output length, tokens")]
WorkloadOpt = Annotated[str, typer.Option(help="random | shared-prefix | jsonl | sharegpt")]
PromptsOpt = Annotated[Path | None, typer.Option(help="Prompts file for --workload jsonl|sharegpt")]
RequestsOpt = Annotated[
    str | None,
    typer.Option(help="Measured requests per load point, or 'auto' (stop when precise)"),
]
PrecisionOpt = Annotated[float, typer.Option(help="auto: stop at ±this fraction (95% interval)")]
MinRequestsOpt = Annotated[int, typer.Option(help="auto: first check")]
MaxRequestsOpt = Annotated[int, typer.Option(help="auto: cap (0: none)")]
MaxDurationOpt = Annotated[float | None, typer.Option(help="auto: most seconds per load point")]
ClientCpusOpt = Annotated[
    str | None, typer.Option(help="Pin the measuring processes to these CPUs, e.g. 6,7")
]
DurationOpt = Annotated[
    float | None, typer.Option(help="Seconds per load point (instead of --requests)")
]
WarmupOpt = Annotated[int, typer.Option(help="Warmup requests per point (stored, not counted)")]
ApiKeyEnvOpt = Annotated[str | None, typer.Option(help="Environment variable holding the API key")]
TokenizerOpt = Annotated[Path | None, typer.Option(help="Local Hugging Face tokenizer directory")]
SloOpt = Annotated[
    str | None,
    typer.Option(
        help="e.g. ttft_ms=500,tpot_p99_ms=50 (docs/bench.md: ttft/e2e p99, tpot p50/p99, itl p99)"
    ),
]
CapacityRateOpt = Annotated[
    float | None,
    typer.Option(
        "--capacity-rate",
        metavar="UP_TO",
        help="Find the highest request rate ≤ UP_TO req/s (open loop) at which --slo holds, "
        "to one --rate-step (bisection from --rate's first value, else one step)",
    ),
]
RateStepOpt = Annotated[
    float | None,
    typer.Option(
        "--rate-step",
        metavar="REQ_S",
        help="--capacity-rate: the resolution, req/s (default: UP_TO / 32)",
    ),
]
CapacityOpt = Annotated[
    int | None,
    typer.Option(
        "--capacity",
        metavar="UP_TO",
        help="Find the highest concurrency ≤ UP_TO at which --slo holds (bisection from "
        "--concurrency's first value)",
    ),
]
TimeoutOpt = Annotated[float, typer.Option(help="Per-request deadline, s")]
StallTimeoutOpt = Annotated[float, typer.Option(help="Longest silence mid-response, s")]
WorkersOpt = Annotated[
    int | None, typer.Option(help="Measuring processes (default: 1 per 256 streams)")
]
SeedOpt = Annotated[int, typer.Option(help="Seed for prompts and arrivals")]
TrialsOpt = Annotated[int, typer.Option(help="Repetitions of every load point")]
OutOpt = Annotated[Path | None, typer.Option(help="Write raw records + summaries (JSONL)")]
NoDbOpt = Annotated[bool, typer.Option("--no-db", help="Do not store the results")]
CampaignOpt = Annotated[str, typer.Option(help="Campaign the runs are stored under")]
ConfigNameOpt = Annotated[
    str | None, typer.Option("--config", help="Config name (default ENGINE:MODEL)")
]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print a JSON summary on stdout")]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray", metavar="ADDRESS", help="Generate the load from Ray client nodes: HOST:PORT"
    ),
]
ClientsOpt = Annotated[
    int | None,
    typer.Option("--clients", help="With --ray: client nodes sharing the load (default 1)"),
]
TraceOpt = Annotated[
    Path | None, typer.Option(help="Replay this trace: its requests at their timestamps")
]
TraceFormatOpt = Annotated[str, typer.Option(help="Trace format: mooncake | csv | inferlab")]
SpeedOpt = Annotated[
    str | None, typer.Option("--speed", help="Replay: timestamps ÷ X, or a list 1,2 (default 1)")
]
LimitOpt = Annotated[
    int | None, typer.Option("--limit", help="Replay: only the first N requests (of the window)")
]
TraceWindowOpt = Annotated[
    str | None,
    typer.Option("--trace-window", help="Replay: START:END s from the trace's first request"),
]
PrefixesOpt = Annotated[int, typer.Option(help="shared-prefix: number of shared prefixes")]
PrefixTokensOpt = Annotated[int, typer.Option(help="shared-prefix: tokens of each prefix")]
SuffixTokensOpt = Annotated[int, typer.Option(help="shared-prefix: tokens after the prefix")]
PrefixDistOpt = Annotated[
    str, typer.Option(help="shared-prefix: requests per prefix, uniform | zipf:S")
]


def sessions_entries(text: str | None, think_s: float) -> list[dict[str, Any]]:
    """``--sessions 4x8,16x8`` with ``--think-s``, as ``LoadSpec.sessions`` entries."""
    if not text:
        return []
    out = []
    for part in text.split(","):
        found = Sessions.from_label("sessions:" + part.strip())
        if found is None:
            raise ConfigError(f"--sessions: expected USERSxTURNS (e.g. 4x8), got {part!r}")
        out.append({"users": found.users, "turns": found.turns, "think_s": think_s})
    return out
