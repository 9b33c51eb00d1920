"""Configuration of the reference engine (``inferlab sim serve``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from inferlab.errors import ConfigError
from inferlab.sim.faults import check_kind
from inferlab.sim.presets import PRESETS, Levers

__all__ = ["FaultKind", "ModelMode", "SimConfig", "sim_config"]

FaultKind = str  # a key of inferlab.sim.faults.FAULTS
ModelMode = Literal["fixed", "batching"]


class SimConfig(BaseModel):
    """What the simulated engine serves and when each token is written.

    Times are in milliseconds. ``jitter_ms`` is the standard deviation of a normal added to
    the TTFT and to each per-token gap (each clipped at ≥ 0).

    ``model_mode="batching"`` (implied by ``preset``) replaces the fixed TTFT/ITL schedule with
    the continuous-batching model of :mod:`inferlab.sim.model`; ``levers`` are the SGLang flags
    it interprets, ``time_scale`` multiplies every model time. ``startup_s`` (seconds) delays
    listening, standing in for weight loading; ``exit_delay_s`` (seconds) delays exiting after
    SIGINT/SIGTERM, also while it starts (an engine shutting its workers down, or stuck in a
    CUDA call; SIGKILL still ends it at once). ``prefix_cache`` (batching only) reuses whole
    16-token blocks of earlier prompts (:mod:`inferlab.sim.prefixcache`): only the uncached
    tokens cost prefill time.

    ``fault`` (a kind of :data:`inferlab.sim.faults.FAULTS`) hits every ``fault_every``-th
    valid generation request, after ``fault_after`` token chunks; with ``fault_at_s`` /
    ``fault_for_s`` only requests received in that window (s after the first generation
    request); ``exit`` with ``fault_at_s`` exits at that time. ``drip_ms``: the gap between
    two dripped bytes.

    ``launch_sd`` (a log standard deviation, 0.04 ≈ 4%), ``launch_seed`` and ``launch_state``
    draw a per-launch speed factor (:mod:`inferlab.sim.launchspread`); ``launch_factor`` is the
    factor drawn at start-up (not an option), multiplying every time of the launch, and
    ``launch_index`` the launch number, mixed into the jitter's seed (each launch its own).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    model: str = Field(default="inferlab-sim", min_length=1)
    ttft_ms: float = Field(default=50.0, ge=0.0, le=3_600_000.0)
    itl_ms: float = Field(default=10.0, ge=0.0, le=3_600_000.0)
    jitter_ms: float = Field(default=0.0, ge=0.0, le=3_600_000.0)
    tokens_per_chunk: int = Field(default=1, ge=1, le=1_000_000)
    seed: int = 0
    vocab_size: int = Field(default=4096, ge=2, le=10_000_000)
    max_model_len: int = Field(default=32768, ge=1)
    truth_path: Path | None = None
    fault: FaultKind | None = None
    fault_after: int = Field(default=0, ge=0)
    fault_every: int = Field(default=1, ge=1)
    fault_at_s: float | None = Field(default=None, ge=0.0)
    fault_for_s: float | None = Field(default=None, gt=0.0)
    drip_ms: float = Field(default=1.0, gt=0.0, le=60_000.0)
    api_key: str | None = Field(default=None, min_length=1)  # like vLLM's --api-key
    model_mode: ModelMode = "fixed"
    preset: str | None = None
    time_scale: float = Field(default=1.0, gt=0.0, le=1000.0)
    decode_log_interval: int = Field(default=40, ge=1)
    startup_s: float = Field(default=0.0, ge=0.0, le=3600.0)
    exit_delay_s: float = Field(default=0.0, ge=0.0, le=3600.0)
    levers: Levers = Levers()
    #: SGLang's ``--tp-size``: how many rank traces a capture writes (the timing is the preset's)
    tp_size: int = Field(default=1, ge=1, le=64)
    prefix_cache: bool = False
    #: mean KL (nats) by which the served distribution is tempered (:mod:`inferlab.sim.lm`)
    logprob_shift: float = Field(default=0.0, ge=0.0, le=10.0)
    launch_sd: float = Field(default=0.0, ge=0.0, le=1.0)
    launch_seed: int | None = None
    launch_state: Path | None = None
    #: drawn at start-up from ``launch_sd`` (``sim.launchspread``); not a ``sim serve`` option
    launch_factor: float = Field(default=1.0, gt=0.0)
    #: the launch number taken from ``launch_state``; mixed into the jitter's seed
    launch_index: int | None = None

    @property
    def batching(self) -> bool:
        """Whether the continuous-batching model paces the answers."""
        return self.model_mode == "batching" or self.preset is not None

    @field_validator("fault")
    @classmethod
    def _check_fault(cls, v: str | None) -> str | None:
        return None if v is None else check_kind(v)

    @model_validator(mode="after")
    def _check_host(self) -> SimConfig:
        if not self.host.strip():
            raise ValueError("host must not be empty")
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(
                f"unknown preset {self.preset!r}; expected one of {', '.join(sorted(PRESETS))}"
            )
        if not self.batching:
            if self.levers != Levers():
                raise ValueError("SGLang levers need --preset or --model-mode batching")
            if self.prefix_cache:
                raise ValueError("--prefix-cache needs --preset or --model-mode batching")
        elif self.fault is not None or self.jitter_ms > 0.0 or self.tokens_per_chunk != 1:
            raise ValueError(
                "--fault, --jitter-ms and --tokens-per-chunk belong to the fixed-timing mode, "
                "not to --preset / --model-mode batching"
            )
        return self


def sim_config(labels: Mapping[str, str] | None = None, **fields: Any) -> SimConfig:
    """Build a :class:`SimConfig`; pydantic's errors become a ``ConfigError`` naming the field.

    ``labels`` maps field names to what the user typed (e.g. ``ttft_ms`` → ``--ttft-ms``).
    """
    names = labels or {}
    try:
        return SimConfig(**fields)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "config"
            parts.append(f"{names.get(loc, loc)}: {err['msg']}")
        raise ConfigError("invalid sim option " + "; ".join(parts)) from exc
