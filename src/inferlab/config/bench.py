"""Typed, closed configuration of one load sweep (``inferlab bench``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    model_validator,
)

from inferlab.config.urls import redact_url
from inferlab.errors import ConfigError

__all__ = ["SLO", "BenchConfig", "WorkloadSpec", "validation_message"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SLO(_Closed):
    """Service-level objectives; a request is *good* when it meets every one given (ms)."""

    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)
    e2e_ms: float | None = Field(default=None, gt=0)

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
        return self.ttft_ms is None and self.tpot_ms is None and self.e2e_ms is None


class WorkloadSpec(_Closed):
    """Where prompts come from and how long outputs are (tokens)."""

    kind: Literal["random", "jsonl", "sharegpt"] = "random"
    input_tokens: int = Field(default=256, ge=1)
    output_tokens: int = Field(default=256, ge=1)
    path: Path | None = None
    seed: int = 0

    @model_validator(mode="after")
    def _path_needed(self) -> WorkloadSpec:
        if self.kind != "random" and self.path is None:
            raise ValueError(f"workload kind {self.kind!r} needs a path")
        return self


class BenchConfig(_Closed):
    """One load sweep against one running endpoint."""

    url: str
    model: str | None = None
    endpoint: Literal["completions", "chat"] = "completions"
    engine: str = "vllm"
    concurrency: list[int] = Field(default_factory=list)
    rate: list[float] = Field(default_factory=list)
    arrival: Literal["poisson", "gamma"] = "poisson"
    burstiness: float = Field(default=1.0, gt=0)
    max_concurrency: int | None = Field(default=None, ge=1)
    workload: WorkloadSpec = WorkloadSpec()
    requests: int | None = Field(default=None, ge=1)
    duration_s: float | None = Field(default=None, gt=0)
    warmup: int = Field(default=0, ge=0)
    trials: int = Field(default=1, ge=1)
    api_key_env: str | None = None
    tokenizer: Path | None = None
    timeout_s: float = Field(default=600.0, gt=0)
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

    @model_validator(mode="after")
    def _check(self) -> BenchConfig:
        if not self.concurrency and not self.rate:
            raise ValueError("give --concurrency and/or --rate")
        if any(c < 1 for c in self.concurrency):
            raise ValueError("concurrency values must be ≥ 1")
        if any(r <= 0 for r in self.rate):
            raise ValueError("rate values must be > 0 requests/s")
        if self.requests is None and self.duration_s is None:
            raise ValueError("give --requests or --duration")
        return self


def validation_message(exc: ValidationError, where: str) -> str:
    """One line per pydantic error: ``where: field: message``."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        parts.append(f"{where}: {loc}: {err['msg']}")
    return "; ".join(parts)
