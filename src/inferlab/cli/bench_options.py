"""The options of ``inferlab bench``, generated from the fields of the sweep's model.

The model is ``BenchConfig`` (its ``LoadSpec`` fields and the workload's): :data:`FLAGS` says,
per field, the help line and the ``--help`` panel; the flag, its type and its default come
from the field. The values parsed go back into the model by the same table
(:func:`bench_config`), so a field, its flag and the error naming it cannot drift apart."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from inferlab.config.bench import SLO, BenchConfig, SessionsSpec, WorkloadSpec
from inferlab.cpus import format_cpu_list, host_cpus, parse_cpu_list
from inferlab.errors import ConfigError

from .options import OUTPUT, RUN, STORE

__all__ = [
    "CAPACITY",
    "FLAGS",
    "INTERNAL",
    "PANELS",
    "BenchRun",
    "Flag",
    "bench_config",
    "fields_of",
    "with_flags",
]

SERVER, LOAD, STOP, WORKLOAD = "Server", "Load", "Stopping", "Workload"
REPLAY, CLIENT, CAPACITY = "Replay", "Client", "SLO and capacity"
#: the panels of ``bench --help``, in the order they show (Store and Output: cli/options.py)
PANELS = (SERVER, LOAD, STOP, WORKLOAD, REPLAY, CAPACITY, CLIENT, STORE, OUTPUT, RUN)

N = TypeVar("N", int, float)
_NO_DEFAULT: Any = object()


def _num_list(kind: type[N]) -> Callable[[str, str], list[N]]:
    def parse(text: str, opt: str) -> list[N]:
        """``1,8,16`` as numbers of ``kind``; ConfigError naming ``opt`` when one is not."""
        try:
            return [kind(x) for x in text.split(",") if x.strip()]
        except ValueError:
            what = "integers" if kind is int else "numbers"
            raise ConfigError(f"{opt}: expected comma-separated {what}, got {text!r}") from None

    return parse


def _requests(text: str, opt: str) -> int | Literal["auto"]:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{opt}: expected a count or 'auto', got {text!r}") from None


def _client_cpus(text: str, opt: str) -> tuple[int, ...]:
    cpus = parse_cpu_list(text, opt)
    missing = sorted(set(cpus) - set(host_cpus()))
    if missing:
        raise ConfigError(
            f"{opt}: CPU {format_cpu_list(missing)} is not on this host "
            f"(it has {format_cpu_list(host_cpus())})"
        )
    return cpus


def _sessions(text: str, opt: str) -> list[dict[str, Any]]:
    """``4x8,16x8`` as ``LoadSpec.sessions`` entries (``--think-s`` is set on them after)."""
    from inferlab.config.pattern import Sessions

    out = []
    for part in text.split(","):
        found = Sessions.from_label("sessions:" + part.strip())
        if found is None:
            raise ConfigError(f"{opt}: expected USERSxTURNS (e.g. 4x8), got {part!r}")
        out.append({"users": found.users, "turns": found.turns, "think_s": 0.0})
    return out


def _think(value: float, fields: dict[str, Any]) -> None:
    for entry in fields.get("sessions", ()):
        entry["think_s"] = value


def _window(text: str | None, fields: dict[str, Any]) -> None:
    """``--trace-window START:END`` as ``trace_start_s`` and ``trace_end_s``."""
    if text is None:
        return
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        fields["trace_start_s"] = float(start) if start.strip() else 0.0
        fields["trace_end_s"] = float(end) if end.strip() else None
    except ValueError:
        raise ConfigError(
            f"--trace-window: expected START:END seconds (either may be empty), got {text!r}"
        ) from None


@dataclass(frozen=True)
class Flag:
    """One option of ``bench``: the field it sets (``workload.kind`` for the workload's),
    its help line and panel. The flag is the field's name (``_`` → ``-``, the unit suffix
    ``_s`` dropped) unless ``flag`` says; its type and default are the field's, unless
    ``parse`` turns the text given into the field's value (lists, ``KEY=VALUE``). ``into``
    (with ``type`` and ``default``): an option that sets its fields itself."""

    field: str
    panel: str
    help: str
    flag: str = ""
    short: str = ""
    metavar: str | None = None
    parse: Callable[[str, str], Any] | None = None
    also: tuple[str, ...] = ()
    into: Callable[[Any, dict[str, Any]], None] | None = None
    type: Any = None
    default: Any = _NO_DEFAULT

    @property
    def option(self) -> str:
        if self.flag:
            return self.flag
        name = self.field.rpartition(".")[2]
        return "--" + name.removesuffix("_s").replace("_", "-")

    @property
    def name(self) -> str:
        """The parameter's name: the flag's, as a Python identifier."""
        return self.option[2:].replace("-", "_")

    def model_field(self) -> FieldInfo:
        model, _, name = self.field.rpartition(".")
        models: dict[str, type[BaseModel]] = {
            "": BenchConfig,
            "workload": WorkloadSpec,
            "sessions": SessionsSpec,
        }
        return models[model].model_fields[name]

    def parameter(self) -> inspect.Parameter:
        """The typer parameter: the option's type, its default, help and panel."""
        if self.into is not None:
            typ, default = self.type, self.default
        elif self.parse is not None:
            typ, default = str | None, None
        else:
            info = self.model_field()
            typ = info.annotation
            default = inspect.Parameter.empty if info.is_required() else info.default
        decls = (self.option, self.short) if self.short else (self.option,)
        opt = typer.Option(*decls, help=self.help, metavar=self.metavar, rich_help_panel=self.panel)
        return inspect.Parameter(
            self.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=default,
            annotation=Annotated[typ, opt],
        )


#: every field of the sweep that ``bench`` sets, in ``--help`` order within each panel
FLAGS: tuple[Flag, ...] = (
    Flag("url", SERVER, "Base URL, e.g. http://127.0.0.1:8000"),
    Flag("model", SERVER, "Model name (default: first listed)"),
    Flag("endpoint", SERVER, "completions | chat"),
    Flag("engine", SERVER, "Engine kind (exact-length fields); default: detected"),
    Flag("api_key_env", SERVER, "Environment variable holding the API key"),
    Flag("tokenizer", SERVER, "Local Hugging Face tokenizer directory"),
    Flag("concurrency", LOAD, "Closed loop: C or a list 1,8,16", short="-c", parse=_num_list(int)),
    Flag("rate", LOAD, "Open loop: requests/s, or a list 1,2,4", parse=_num_list(float)),
    Flag(
        "sessions",
        LOAD,
        "Multi-turn: USERSxTURNS conversations, or a list 4x8,16x8",
        parse=_sessions,
    ),
    Flag(
        "sessions.think_s",
        LOAD,
        "Sessions: seconds between an answer and the next turn",
        flag="--think-s",
        into=_think,
        type=float,
        default=0.0,
    ),
    Flag("arrival", LOAD, "Open loop: poisson | gamma"),
    Flag("burstiness", LOAD, "gamma shape; <1 burstier"),
    Flag("max_concurrency", LOAD, "Open loop: cap on requests in flight"),
    Flag("trials", LOAD, "Repetitions of every load point"),
    Flag("warmup", LOAD, "Warmup requests per point (stored, not counted)"),
    Flag(
        "requests",
        STOP,
        "Measured requests per load point, or 'auto' (stop when precise)",
        parse=_requests,
    ),
    Flag("duration_s", STOP, "Seconds per load point (instead of --requests)"),
    Flag("precision", STOP, "auto: stop at ±this fraction (95% interval)"),
    Flag("min_requests", STOP, "auto: first check"),
    Flag("max_requests", STOP, "auto: cap (0: none)"),
    Flag("max_duration_s", STOP, "auto: most seconds per load point"),
    Flag("timeout_s", STOP, "Per-request deadline, s"),
    Flag("stall_timeout_s", STOP, "Longest silence mid-response, s"),
    Flag("workload.kind", WORKLOAD, "random | shared-prefix | jsonl | sharegpt", flag="--workload"),
    Flag("workload.input_tokens", WORKLOAD, "Prompt length, tokens (random)"),
    Flag("workload.output_tokens", WORKLOAD, "Output length, tokens"),
    Flag("workload.path", WORKLOAD, "Prompts file for --workload jsonl|sharegpt", flag="--prompts"),
    Flag("workload.prefixes", WORKLOAD, "shared-prefix: number of shared prefixes"),
    Flag("workload.prefix_tokens", WORKLOAD, "shared-prefix: tokens of each prefix"),
    Flag("workload.suffix_tokens", WORKLOAD, "shared-prefix: tokens after the prefix"),
    Flag("workload.prefix_dist", WORKLOAD, "shared-prefix: requests per prefix, uniform | zipf:S"),
    Flag("seed", WORKLOAD, "Seed for prompts and arrivals", also=("workload.seed",)),
    Flag("trace", REPLAY, "Replay this trace: its requests at their timestamps"),
    Flag("trace_format", REPLAY, "Trace format: mooncake | csv | inferlab"),
    Flag(
        "speed", REPLAY, "Replay: timestamps ÷ X, or a list 1,2 (default 1)", parse=_num_list(float)
    ),
    Flag(
        "trace_limit", REPLAY, "Replay: only the first N requests (of the window)", flag="--limit"
    ),
    Flag(
        "trace_start_s",
        REPLAY,
        "Replay: START:END s from the trace's first request",
        flag="--trace-window",
        into=_window,
        type=str | None,
        default=None,
        also=("trace_end_s",),
    ),
    Flag(
        "slo",
        CAPACITY,
        "e.g. ttft_ms=500,tpot_p99_ms=50 (docs/bench.md: ttft/e2e p99, tpot p50/p99, itl p99)",
        parse=lambda text, _: SLO.parse(text),
    ),
    Flag(
        "client_cpus",
        CLIENT,
        "Pin the measuring processes to these CPUs, e.g. 6,7",
        parse=_client_cpus,
    ),
    Flag("workers", CLIENT, "Measuring processes (default: 1 per 256 streams)"),
)

#: the fields of the sweep that no option sets: the method's constants, a campaign's own, or
#: set by inferlab itself, or ``points`` (a list of ``[[load.points]]`` tables, whose flat
#: flags --concurrency, --rate, --trace, --sessions are the sugar)
#: (tests/unit/cli/test_vocabulary.py: every other field has a flag)
INTERNAL = frozenset(
    {"looks", "min_effect", "alpha", "stop_on_precision", "lag_limit_ms", "not_before_ns", "points"}
)


def with_flags(fn: Callable[..., None], rest: Callable[..., None]) -> Callable[..., None]:
    """``fn(**options)`` with the parameters of :data:`FLAGS` and then those of ``rest`` (the
    options that are not the sweep's): what typer reads to build the command."""
    tail = inspect.signature(rest, eval_str=True).parameters.values()
    params = [f.parameter() for f in FLAGS]
    params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in tail]
    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return fn


def _put(fields: dict[str, Any], path: str, value: Any) -> None:
    model, _, name = path.rpartition(".")
    (fields.setdefault(model, {}) if model else fields)[name] = value


def bench_config(values: Mapping[str, Any]) -> BenchConfig:
    """The parsed options (by parameter name) as the sweep's config; a bad value is a
    ``ConfigError`` naming the option."""
    fields: dict[str, Any] = {}
    for f in FLAGS:
        value = values[f.name]
        if f.into is not None:
            f.into(value, fields)
            continue
        if f.parse is not None:
            if value is None:
                continue
            value = f.parse(value, f.option)
        for path in (f.field, *f.also):
            _put(fields, path, value)
    try:
        return BenchConfig(**fields)
    except ValidationError as exc:
        raise ConfigError(_message(exc)) from None


def _message(exc: ValidationError) -> str:
    """One part per error, naming the option that set the field (``--duration: ...``)."""
    by_field = {path: f.option for f in FLAGS for path in (f.field, *f.also)}
    parts = []
    for err in exc.errors():
        loc = [str(x) for x in err["loc"]]
        key = ".".join(x for x in loc if not x.isdigit())
        where = by_field.get(key) or by_field.get(loc[0] if loc else "") or ".".join(loc)
        where = where or "bench"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


@dataclass(frozen=True)
class BenchRun:
    """What ``bench`` does besides the sweep: where the results go, what it prints, from
    where the load comes, and the capacity search it may run instead."""

    out: Path | None
    db: Path | None  # None: --no-db
    campaign: str
    config: str | None
    format: str
    ray: str | None = None
    clients: int | None = None
    capacity: int | None = None
    capacity_rate: float | None = None
    rate_step: float | None = None

    @property
    def as_json(self) -> bool:
        return self.format == "json"


def fields_of(flags: Iterable[Flag]) -> set[str]:
    """The sweep's fields these flags set."""
    return {p for f in flags for p in (f.field, *f.also)}
