"""Typed, closed configuration of one load sweep (``inferlab bench``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_serializer,
    model_serializer,
    model_validator,
)

from inferlab.config.pattern import Arrival, ClosedLoop, LoadPattern, OpenLoop, Replay, Sessions
from inferlab.config.urls import redact_url
from inferlab.config.workload import PREFIX_FIELDS, WorkloadSpec
from inferlab.errors import ConfigError

#: ``PREFIX_FIELDS`` and ``WorkloadSpec`` stay importable from here (``config.workload``)
__all__ = [
    "PREFIX_FIELDS",
    "SLO",
    "TRACE_FIELDS",
    "BenchConfig",
    "LoadSpec",
    "PatternField",
    "SessionsSpec",
    "TraceFormat",
    "WorkloadSpec",
    "check_auto",
    "validation_message",
]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SLO(_Closed):
    """Service-level objectives (ms); a request is *good* when its own values meet every limit
    given. ``ttft_ms``, ``tpot_ms``, ``e2e_ms``: per-request limits; the ``_pXX_ms`` keys also
    limit that percentile over the point's requests (``stats.slo``: holds, fails, undecided)."""

    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)
    e2e_ms: float | None = Field(default=None, gt=0)
    ttft_p99_ms: float | None = Field(default=None, gt=0)
    tpot_p50_ms: float | None = Field(default=None, gt=0)
    tpot_p99_ms: float | None = Field(default=None, gt=0)
    e2e_p99_ms: float | None = Field(default=None, gt=0)
    itl_p99_ms: float | None = Field(default=None, gt=0)

    @classmethod
    def parse(cls, text: str) -> SLO:
        """``"ttft_ms=500,tpot_ms=50"`` → SLO."""
        values: dict[str, float] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, val = part.partition("=")
            if not sep:
                raise ConfigError(f"--slo: expected KEY=VALUE, got {part!r}")
            if key.strip() not in cls.model_fields:
                raise ConfigError(
                    f"--slo: unknown key {key.strip()!r}; expected {', '.join(cls.model_fields)}"
                )
            try:
                values[key.strip()] = float(val)
            except ValueError:
                raise ConfigError(f"--slo: {key.strip()} must be a number, got {val!r}") from None
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(validation_message(exc, "--slo")) from None

    @property
    def empty(self) -> bool:
        return not self.limits()

    def limits(self) -> dict[str, float]:
        """The limits given, key → ms, in field order."""
        return {k: v for k, v in self.model_dump().items() if v is not None}

    @property
    def text(self) -> str:
        """``"tpot_p99_ms=50,ttft_ms=500"``: the limits as ``--slo`` takes them (sorted keys);
        two SLOs are the same when their texts are."""
        return ",".join(f"{k}={v:g}" for k, v in sorted(self.limits().items()))


#: the trace formats ``load.traces.TRACE_FORMATS`` reads (a test keeps the two the same)
TraceFormat = Literal["mooncake", "csv", "inferlab"]

#: the fields of a trace replay; left out of a dump when no trace is given (runs stored
#: before replay dump the same bytes)
TRACE_FIELDS = ("trace", "trace_format", "speed", "trace_limit", "trace_start_s", "trace_end_s")


class SessionsSpec(_Closed):
    """Multi-turn sessions: ``users`` conversations of ``turns`` turns, ``think_s`` seconds
    between an answer and the next turn; ``"4x8"`` is short for users 4, turns 8."""

    users: int = Field(ge=1)
    turns: int = Field(ge=1)
    think_s: float = Field(default=0.0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _short(cls, data: Any) -> Any:
        if isinstance(data, str):
            found = Sessions.from_label("sessions:" + data.strip())
            if found is None:
                raise ValueError(f"expected USERSxTURNS (e.g. 4x8), got {data!r}")
            return {"users": found.users, "turns": found.turns}
        return data


def _pattern(value: Any) -> LoadPattern:
    """A ``[[load.points]]`` entry: a table with a ``kind`` of ``PATTERNS`` (or a pattern)."""
    if isinstance(value, LoadPattern):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a table with a kind, got {value!r}")
    try:
        return LoadPattern.from_json(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


#: a load pattern as a config field: a ``kind`` table in, its JSON out
PatternField = Annotated[
    LoadPattern, PlainValidator(_pattern), PlainSerializer(lambda p: p.to_json())
]


class LoadSpec(_Closed):
    """What load to offer and how long to measure it: the fields ``inferlab bench`` and a
    campaign's ``[load]`` share (each adds its own, and its own checks). The flat fields
    (``concurrency``, ``rate``, ``trace``..., ``sessions``) are short for patterns;
    ``points`` names any pattern of ``PATTERNS`` by kind (``[[load.points]] kind = ...``)."""

    workload: WorkloadSpec = WorkloadSpec()
    endpoint: Literal["completions", "chat"] = "completions"
    concurrency: list[int] = Field(default_factory=list)
    rate: list[float] = Field(default_factory=list)
    arrival: Arrival = "poisson"
    burstiness: float = Field(default=1.0, gt=0)
    max_concurrency: int | None = Field(default=None, ge=1)
    sessions: list[SessionsSpec] = Field(default_factory=list)
    trials: int = Field(default=1, ge=1)
    warmup: int = Field(default=0, ge=0)
    requests: int | Literal["auto"] | None = None
    duration_s: float | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=600.0, gt=0)
    tokenizer: Path | None = None
    precision: float = Field(default=0.05, gt=0, lt=1)  # auto: ±5% of the estimate
    min_requests: int = Field(default=50, ge=2)  # auto: first check
    max_requests: int = Field(default=2000, ge=0)  # auto: cap (0: none, max_duration_s then)
    max_duration_s: float | None = Field(default=None, gt=0)  # auto: per point
    looks: int = Field(default=4, ge=3, le=5)  # sequential A/B: planned looks
    min_effect: float = Field(default=0.02, ge=0, lt=1)  # sequential A/B: ±equivalence
    alpha: float = Field(default=0.05, gt=0, lt=1)  # sequential A/B: two-sided level
    trace: Path | None = None  # replay this trace's requests at their timestamps
    trace_format: TraceFormat = "mooncake"
    speed: list[float] = Field(default_factory=lambda: [1.0])  # replay: timestamps ÷ speed
    trace_limit: int | None = Field(default=None, ge=1)  # replay: the first N (of the window)
    trace_start_s: float = Field(default=0.0, ge=0)  # replay window, s from the first request
    trace_end_s: float | None = Field(default=None, gt=0)
    points: list[PatternField] = Field(default_factory=list)

    @model_validator(mode="after")
    def _trace(self) -> LoadSpec:
        if any(not 0 < x < float("inf") for x in self.speed) or not self.speed:
            raise ValueError("speed values must be finite numbers > 0")
        if self.trace_end_s is not None and self.trace_end_s <= self.trace_start_s:
            raise ValueError("trace window: trace_end_s must be after trace_start_s")
        if self.trace is None and _trace_set(self):
            raise ValueError(
                "trace_format, speed, trace_limit and the trace window need a trace (--trace)"
            )
        if self.points:
            labels = [p.label for p in self.patterns()]
            twice = sorted({x for x in labels if labels.count(x) > 1})
            if twice:
                raise ValueError(f"points: two load points share the label {twice[0]!r}")
        return self

    def patterns(self) -> list[LoadPattern]:
        """One closed-loop pattern per concurrency, one open-loop pattern per rate, one
        replay per speed when a trace is given, one sessions pattern per ``sessions``, then
        ``points`` as given."""
        closed: list[LoadPattern] = [ClosedLoop(c) for c in self.concurrency]
        opened: list[LoadPattern] = [
            OpenLoop(r, self.arrival, self.burstiness, self.max_concurrency) for r in self.rate
        ]
        replays: list[LoadPattern] = [
            Replay(
                self.trace_format,
                x,
                str(self.trace),
                self.max_concurrency,
                self.trace_limit,
                self.trace_start_s,
                self.trace_end_s,
            )
            for x in (self.speed if self.trace is not None else [])
        ]
        sessions: list[LoadPattern] = [Sessions(x.users, x.turns, x.think_s) for x in self.sessions]
        return closed + opened + replays + sessions + list(self.points)


def _trace_set(load: LoadSpec) -> bool:
    """Whether any replay field differs from its default."""
    return any(
        getattr(load, f) != LoadSpec.model_fields[f].get_default(call_default_factory=True)
        for f in TRACE_FIELDS
    )


#: the order a ``BenchConfig`` is dumped in (run JSON ``config``), as before ``LoadSpec``
_BENCH_DUMP_ORDER = (
    *("url", "model", "endpoint", "engine", "concurrency", "rate", "arrival", "burstiness"),
    *("max_concurrency", "workload", "requests", "duration_s", "precision", "min_requests"),
    *("max_requests", "max_duration_s", "looks", "stop_on_precision", "min_effect"),
    *("lag_limit_ms", "client_cpus", "warmup", "trials", "api_key_env", "tokenizer"),
    *("timeout_s", "stall_timeout_s", "workers", "slo", "seed", "not_before_ns"),
)
#: fields dumped only when set (configs stored before them keep their bytes)
_DUMP_WHEN_SET = ("sessions", "points")


class BenchConfig(LoadSpec):
    """One load sweep against one running endpoint."""

    url: str
    model: str | None = None
    engine: str | None = None  # None: detected from what the server says (load.detect)
    stop_on_precision: bool = True  # auto: False measures to the cap (a sequential reference)
    lag_limit_ms: float = Field(default=1.0, gt=0)  # client loop-lag p99 above: untrusted
    client_cpus: tuple[int, ...] | None = None  # pin the measuring processes here
    api_key_env: str | None = None
    stall_timeout_s: float = Field(default=60.0, gt=0)
    workers: int | None = Field(default=None, ge=1)
    slo: SLO = SLO()
    seed: int = 0
    #: a ``perf_counter_ns`` instant before which no measured phase starts (hosts that share
    #: one load start together, ``bench --ray --clients``); None: as soon as ready
    not_before_ns: int | None = None

    @field_serializer("url")
    def _url_shown(self, url: str) -> str:
        """Wherever the config is dumped (run JSON, the store), a URL's password is not."""
        return redact_url(url)

    @model_serializer(mode="wrap")
    def _in_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Dumped in the order of ``_BENCH_DUMP_ORDER``, the run file's bytes as before."""
        data: dict[str, Any] = handler(self)
        if self.trace is None:
            data = {k: v for k, v in data.items() if k not in TRACE_FIELDS}
        for k in _DUMP_WHEN_SET:
            if not data.get(k):
                data.pop(k, None)
        if data.get("alpha") == 0.05:  # the default: configs stored before it keep their bytes
            data.pop("alpha")
        return {k: data[k] for k in _BENCH_DUMP_ORDER if k in data} | data

    @model_validator(mode="after")
    def _check(self) -> BenchConfig:
        if any(c < 1 for c in self.concurrency):
            raise ValueError("concurrency values must be ≥ 1")
        if any(r <= 0 for r in self.rate):
            raise ValueError("rate values must be > 0 requests/s")
        if not self.patterns():
            raise ValueError("give --concurrency, --rate, --trace and/or --sessions")
        counted = any(p.counted for p in self.patterns())
        if counted and self.requests is None and self.duration_s is None:
            raise ValueError("give --requests or --duration")
        if isinstance(self.requests, int) and self.requests < 1:
            raise ValueError("requests must be ≥ 1 or 'auto'")
        if self.requests == "auto":
            check_auto(self)
        return self

    @property
    def adaptive(self) -> bool:
        return self.requests == "auto"


def check_auto(load: LoadSpec) -> None:
    """The rules of ``requests = "auto"`` (messages name the fields)."""
    rate, duration_s = load.rate, load.duration_s
    min_requests, max_requests = load.min_requests, load.max_requests
    max_duration_s = load.max_duration_s
    if rate or load.sessions:
        raise ValueError(
            "requests = 'auto' stops closed-loop points (concurrency); for rate points give "
            "requests = N or duration_s (a sessions point sends users × turns requests)"
        )
    if duration_s is not None:
        raise ValueError("requests = 'auto' and duration_s exclude each other (use max_duration_s)")
    if load.trace is not None:
        raise ValueError(
            "requests = 'auto' stops closed-loop points; a trace replays its own requests "
            "(give requests = N for the concurrency points, or replay in a run of its own)"
        )
    bad = [p.label for p in load.points if not p.closed_loop]
    if bad:
        raise ValueError(f"requests = 'auto' stops closed-loop points; points: {bad[0]} is not one")
    if max_requests and min_requests > max_requests:
        raise ValueError(
            f"min_requests ({min_requests}) is more than max_requests ({max_requests})"
        )
    if not max_requests and max_duration_s is None:
        raise ValueError(
            "requests = 'auto' needs a cap: max_requests > 0 (default 2000) or max_duration_s"
        )


def validation_message(exc: ValidationError, where: str) -> str:
    """One line per pydantic error: ``where: field: message``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        parts.append(f"{where}: {loc}: {err['msg']}")
    return "; ".join(parts)
