"""The campaign file (TOML; YAML accepted): engine defaults, configs, verify, load, SLOs.

Validation errors name the file, the line and the field. Config inheritance (``extends``),
``set`` and ``unset`` are resolved by ``inferlab.campaign.parts.resolve``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from inferlab.config.bench import SLO, LoadSpec, check_auto
from inferlab.config.evalgate import EvalGate
from inferlab.config.lossy import LossyGate
from inferlab.config.search import SearchSection
from inferlab.config.source import expand_env, locate, parse_text
from inferlab.cpus import parse_cpu_list
from inferlab.errors import ConfigError

__all__ = [
    "DEFAULT_LAUNCHES",
    "CampaignFile",
    "CampaignSection",
    "ClusterSection",
    "ConfigSpec",
    "EngineSection",
    "FileKind",
    "LoadSection",
    "Probe",
    "ProfileSection",
    "VerifySection",
    "load_campaign",
]


DEFAULT_LAUNCHES = (2, 4)  # [load] launches, max_launches when not given (issue 42)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CampaignSection(_Closed):
    name: str = Field(min_length=1)
    description: str | None = None
    output: Path | None = None  # where logs and reports go (default ./inferlab-out/NAME)


#: kernel-config kinds a config can carry as files (``files = { fp8_gemm = "tuned/" }``)
FileKind = Literal["fp8_gemm", "moe"]


class EngineSection(_Closed):
    """Shared by every config: which engine, which model, base args and env, where.

    Kind ``command`` starts ``argv`` (placeholders ``{port}``, ``{host}``, ``{model}``) and
    polls ``health``; ``metrics`` is its Prometheus path and ``api`` the request fields it
    accepts (``openai``: plain OpenAI; or an engine kind such as ``vllm``)."""

    kind: str
    model: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    host: str = "local"  # or an ssh target: user@host
    port: int | None = Field(default=None, ge=0, le=65535)  # None / 0: a free port
    url: str | None = None  # kind "openai": the endpoint that is already running
    python: str | None = None  # interpreter for module launchers (default: this one)
    launcher: str | None = None  # engine-specific launcher variant (e.g. vLLM "module")
    ready_timeout_s: float = Field(default=900.0, gt=0)
    stop_grace_s: float = Field(default=20.0, gt=0)
    argv: list[str] = Field(default_factory=list)  # kind "command": the command line
    health: str | None = None  # health path (default: the engine's)
    metrics: str | None = None  # Prometheus path (default: the engine's)
    api: str | None = None  # kind "command": openai | an engine kind whose fields it accepts
    gpus: int | None = Field(default=None, ge=0)  # GPUs per server (default: parallel flags)
    #: CPUs the local server is pinned to ("0-5", "0,2,4"); "none": no pinning; default: the
    #: CPUs left after the client's share (docs/launch.md)
    cpus: str | None = None

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: str | None) -> str | None:
        if v is not None and v.strip().lower() != "none":
            _cpu_list(v)
        return v


def _cpu_list(text: str) -> None:
    """Syntax check inside a validator: a ValueError, so the message gets its file and line."""
    try:
        parse_cpu_list(text, field="")
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix(": ")) from None


class ClusterSection(_Closed):
    """``run --ray``: the Ray CPUs reserved beside each server's GPUs, and for its client."""

    server_cpus: float = Field(default=1.0, gt=0)
    client_cpus: float = Field(default=1.0, gt=0)


class ConfigSpec(_Closed):
    """One configuration to try. ``args`` are appended; ``set``/``unset`` edit flags.

    ``files`` installs kernel-config files into the engine's package for this config only
    (kind → directory, relative to the campaign file); ``tune`` makes them first:
    ``{ fp8_gemm = "from-log" }`` tunes the shapes the baseline's launch log ran untuned (on
    this host's GPUs), a path to a saved ``tune-run-*.json`` writes that run's configs."""

    name: str = Field(min_length=1)
    extends: str | None = None
    args: list[str] = Field(default_factory=list)
    set: dict[str, str | int | float | bool] = Field(default_factory=dict)
    unset: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[FileKind, str] = Field(default_factory=dict)
    tune: dict[Literal["fp8_gemm"], str] = Field(default_factory=dict)
    #: another checkpoint served in the campaign model's place (e.g. its block-FP8 twin): the
    #: launcher's model argument for this config and those that extend it
    model: str | None = Field(default=None, min_length=1)
    description: str | None = None
    #: False: the lever may change greedy outputs (e.g. another dtype), so greedy equivalence
    #: is recorded but does not fail verification; unset: inherited (default True)
    lossless: bool | None = None
    #: this config's distribution-agreement gate (inherited; default ``[verify] lossy``)
    lossy: LossyGate | None = None

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", v):
            raise ValueError("use letters, digits and _ . + - (it names files)")
        return v


class Probe(_Closed):
    """A smoke request at temperature 0 whose output must match ``expect`` (a regex)."""

    prompt: str
    expect: str
    max_tokens: int = Field(default=16, ge=1)
    chat: bool = True

    @field_validator("expect")
    @classmethod
    def _regex(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return v


DEFAULT_PROBES = (Probe(prompt="Capital of France in one word?", expect="(?i)paris"),)


class VerifySection(_Closed):
    enabled: bool = True
    probes: list[Probe] | None = None  # None: the engine's (verify.checks.default_probes)
    equivalent_to: str | None = None  # greedy outputs must match this config's, token for token
    #: whose stored logprobs gate the lossy configs (default: ``equivalent_to``, else the
    #: baseline; optimize: its baseline, never an incumbent that moved)
    lossy_against: str | None = None
    equivalence_prompts: int = Field(default=8, ge=1)
    equivalence_tokens: int = Field(default=32, ge=1)
    length_tokens: int = Field(default=16, ge=2)
    #: the campaign's distribution-agreement gate for ``lossless = false`` configs (a
    #: config's own ``lossy`` wins); lossless configs get the figures, not gated
    lossy: LossyGate | None = None
    #: the lm-evaluation-harness score gate against the reference config (docs/verify.md)
    eval: EvalGate | None = None


class LoadSection(LoadSpec):
    """``[load]``: the load every config is measured under (``LoadSpec``), and the campaign's
    own: sequential A/B, the baseline recheck, the client's lag limit and CPUs."""

    #: candidates stop early against the baseline (group-sequential A/B); needs trials = 1
    sequential: bool = False
    #: after the last config, the baseline again at every point (order effects, drift)
    recheck_baseline: StrictBool = False
    #: the baseline measured again just before each candidate after the first (baseline, A,
    #: baseline, B, ...): each verdict is taken against its nearest pass (campaign.interleave)
    interleave: StrictBool = False
    #: each config's launches in rounds, more while unsettled to max_launches, unless the
    #: launches so far project that the budget cannot settle it (campaign.rounds: futility)
    launches: int = Field(default=DEFAULT_LAUNCHES[0], ge=1)
    max_launches: int | None = Field(default=None, ge=1)
    max_client_lag_ms: float = Field(default=1.0, gt=0)
    #: CPUs of the measuring client ("6,7"); default: 1 per 16 streams (at most a quarter of
    #: the CPUs), the last ones
    client_cpus: str | None = None

    @field_validator("requests")
    @classmethod
    def _requests(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, int) and v < 1:
            raise ValueError("give a count ≥ 1 or 'auto'")
        return v

    @field_validator("client_cpus")
    @classmethod
    def _client_cpus(cls, v: str | None) -> str | None:
        if v is not None:
            _cpu_list(v)
        return v

    @model_validator(mode="after")
    def _auto(self) -> LoadSection:
        if self.requests == "auto":
            check_auto(self)
        if self.sequential and self.requests != "auto":
            raise ValueError("sequential = true needs requests = 'auto'")
        if self.sequential and self.trials != 1:
            raise ValueError("sequential = true needs trials = 1")
        if self.sequential and not self.max_requests:
            raise ValueError(
                "sequential = true needs max_requests > 0 (its looks are k/looks of it)"
            )
        if (self.max_launches or self.launches) < self.launches:
            raise ValueError(f"give max_launches ≥ launches = {self.launches} (a budget a config)")
        return self


class ProfileSection(_Closed):
    """Capture a profile during these load points, in a separate pass after each config's
    measurement (``inferlab.campaign.parts.capture``)."""

    at: list[str] = Field(min_length=1)  # load point labels: "C=16", "rate=4/s"
    steps: int = Field(default=20, ge=1, le=100_000)  # engine steps to record
    # requests of the profiled pass (default: the point's own count; for ``requests = "auto"``
    # max(min_requests, 100)): the capture needs load only while it records ``steps``
    requests: int | None = Field(default=None, ge=1)
    configs: list[str] | None = None  # default: every config
    activities: tuple[Literal["CPU", "GPU"], ...] = ("CPU", "GPU")
    max_trace_mb: float = Field(default=512.0, gt=0)  # per rank file; larger is not analyzed
    segment: Literal["decode", "prefill", "all"] = "decode"
    with_stack: bool = False
    timeout_s: float = Field(default=600.0, gt=0)  # for the files (and /stop_profile's flush)


class CampaignFile(_Closed):
    campaign: CampaignSection
    engine: EngineSection
    config: list[ConfigSpec] = Field(min_length=1)
    verify: VerifySection = VerifySection()
    load: LoadSection = LoadSection()
    slo: SLO = SLO()
    profile: ProfileSection | None = None
    cluster: ClusterSection = ClusterSection()
    search: SearchSection | None = None  # inferlab optimize (docs/optimize.md)

    @property
    def output_dir(self) -> Path:  # ``[campaign] output``, else inferlab-out/NAME
        return self.campaign.output or Path("inferlab-out") / self.campaign.name


def load_campaign(path: str | Path) -> CampaignFile:
    """Read and validate a campaign file; every error names file:line and the field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read campaign file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        at = p.read_bytes()[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{p}:{at}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    data = parse_text(p, text)
    missing: list[str] = []
    data = {k: (v if k == "verify" else expand_env(v, missing)) for k, v in data.items()}
    if missing:
        var = missing[0]
        line = next((i for i, ln in enumerate(text.splitlines(), 1) if f"${{{var}}}" in ln), None)
        where = f"{p}:{line}" if line else str(p)
        raise ConfigError(f"{where}: ${{{var}}} is not set in the environment")
    try:
        camp = CampaignFile.model_validate(data)
    except ValidationError as exc:
        msgs = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            line = locate(text, loc)
            field = ".".join(str(x) for x in loc) or "(top level)"
            where = f"{p}:{line}" if line else str(p)
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown field (not allowed here)"
            msgs.append(f"{where}: {field}: {msg}")
        raise ConfigError("; ".join(msgs)) from None
    trace = camp.load.trace
    if trace is not None and not trace.is_absolute():  # beside the campaign file
        load = camp.load.model_copy(update={"trace": p.parent / trace})
        camp = camp.model_copy(update={"load": load})
    names = [c.name for c in camp.config]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        line = locate(text, ("config", names.index(dup[0]) + 1 if len(names) > 1 else 0, "name"))
        raise ConfigError(f"{p}:{line}: config.name: {dup[0]!r} is defined twice")
    return camp
