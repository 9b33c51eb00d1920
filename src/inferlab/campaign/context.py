"""What one campaign run and one config of it carry through the pipeline: the bottom layer.

A :class:`RunContext` is made once per ``run``/``up``/``run --ray``: the campaign, its baseline
and reference, the CPU split, the store, where lines go, and the seams (launcher, model clock).
A :class:`ConfigContext` is made per config and filled in by the stages as they run (its
tuned config, installed files, URL, model, launch log, verification, lever evidence). Both
``say`` (a line told), ``record`` (a verification row stored with the config) and build an
``outcome``. The value types the stages and passes hand each other live here too (``Held``,
``StepFailed``, ``LeverItem``, ``Installed``, ``RuntimeFailure``), with the seams' protocols
(``Launcher``, ``Clock``) and the shapes of a stage and a pass. This module imports no part of
``campaign/``: every other module of it may import this one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from inferlab.config.bench import BenchConfig
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.cpus import format_cpu_list
from inferlab.load.adaptive import BaselineRef
from inferlab.load.bench import BenchEvents, LoadPoint
from inferlab.load.results import ResultSink
from inferlab.server import LaunchSpec, ServerProcess, StopReport
from inferlab.server.lifecycle import FatalCheck
from inferlab.store import Store
from inferlab.verify import VerifyReport

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "CampaignEvents",
    "Clock",
    "ConfigContext",
    "ConfigOutcome",
    "CpuSplit",
    "Held",
    "Installed",
    "Launcher",
    "LeverItem",
    "Manifest",
    "ManifestDir",
    "ManifestEntry",
    "Pass",
    "PassFactory",
    "RunContext",
    "RuntimeFailure",
    "Say",
    "Stage",
    "StepFailed",
]

Say = Callable[[str], None]


@dataclass(frozen=True)
class CpuSplit:
    """The server's and the client's CPUs (None: not pinned) and why."""

    server: tuple[int, ...] | None
    client: tuple[int, ...] | None
    source: str  # auto | campaign file | off | remote | not launched | one CPU
    note: str
    server_env: dict[str, str] = field(default_factory=dict)  # the engine's thread knob

    def lines(self) -> list[str]:
        """The split as the plan prints it."""
        if self.server is None and self.client is None:
            return [f"CPU split: none — {self.note}"]
        srv = f"server {format_cpu_list(self.server)}" if self.server else "server not pinned"
        cli = f"client {format_cpu_list(self.client)}" if self.client else "client not pinned"
        out = [f"CPU split ({self.source}): {srv}; {cli} — {self.note}"]
        if self.server_env:
            out.append(
                "    server thread knob: "
                + " ".join(f"{k}={v}" for k, v in sorted(self.server_env.items()))
            )
        return out

    def to_json(self) -> dict[str, JsonValue]:
        """As the stored environment records it."""
        return {
            "server": format_cpu_list(self.server) if self.server else None,
            "client": format_cpu_list(self.client) if self.client else None,
            "source": self.source,
            "note": self.note,
            "server_env": dict(self.server_env),
        }


@dataclass
class StepFailed(Exception):
    """A stage ended the config: its outcome ``status`` and what to tell."""

    status: str
    message: str
    remedy: str | None = None
    tail: tuple[str, ...] = ()


@dataclass
class LeverItem:
    """One item of a config's diff and what shows whether it took effect."""

    item: str  # "--speculative-config" | "env NCCL_PROTO" | "files fp8_gemm" | "model"
    kind: str  # flag | env | files | model
    status: str  # applied | not-applied | unknown
    evidence: str
    source: str | None  # "launch log" | "server_info" | "metrics" | None

    def to_json(self) -> dict[str, JsonValue]:
        return asdict(self)

    @property
    def mark(self) -> str:
        return {"applied": "✓", "not-applied": "✗"}.get(self.status, "?")


class ManifestEntry(TypedDict):
    """One file a manifest installs: its SHA-256, and the original it replaced (None: new)."""

    file: str
    sha256: str
    action: str  # "new" | "replaced"
    original_sha256: str | None
    original: str | None


class ManifestDir(TypedDict):
    """One engine directory of a manifest: its files, and its snapshot (file → SHA-256)
    before; ``written`` once the install into it began."""

    kind: str
    dir: str
    source: str
    created: bool
    before: dict[str, str]
    entries: list[ManifestEntry]
    written: bool


class Manifest(TypedDict):
    """A pending manifest's JSON (``.files/CONFIG.json``, format ``inferlab.files/1``)."""

    format: str
    campaign: str
    config: str
    host: str | None
    python: str
    owner: str  # "run" | "up"
    pid: int
    installed_at: str
    backup: str  # the directory the originals were copied to
    dirs: list[ManifestDir]


@dataclass
class Installed:
    """A pending manifest: what was installed for a config, and how to undo it
    (``campaign.parts.files``)."""

    path: Path  # the manifest file in the campaign's output directory
    data: Manifest

    @property
    def config(self) -> str:
        return str(self.data["config"])

    def entries(self) -> list[dict[str, object]]:
        """Every installed file's entry, its original's text left out."""
        return [
            {k: v for k, v in e.items() if k != "original"}
            for d in self.data["dirs"]
            for e in d["entries"]
        ]


@dataclass(frozen=True)
class RuntimeFailure:
    """The root-cause fatal line of a server that had come up (``campaign.parts.aftermath``)."""

    kind: str
    line_no: int
    text: str
    remedy: str
    log_path: str
    flags: tuple[str, ...] = ()
    tail: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        return f"{self.kind} while serving (log line {self.line_no}): {self.text.strip()[:300]}"

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "kind": self.kind,
            "message": self.message,
            "remedy": self.remedy,
            "flags": list(self.flags),
            "line_no": self.line_no,
            "tail": list(self.tail),
            "log_path": self.log_path,
        }


class Launcher(Protocol):
    """Where a config's server is started, waited for and stopped (``campaign.parts.launch``:
    ``SUBPROCESS``, ``InProcessSim``)."""

    #: whether its servers can outlive this process (then they are recorded against orphans)
    outlives: bool

    def start(self, spec: LaunchSpec) -> ServerProcess:
        """Start the server (not yet ready)."""
        ...

    def wait_ready(self, server: ServerProcess, fatal: FatalCheck | None) -> float:
        """Seconds until it answered its health path; ``LaunchError`` when it does not."""
        ...

    def stop(self, server: ServerProcess, *, drain_timeout_s: float = 60.0) -> StopReport:
        """Stop it and say how (``StopReport``)."""
        ...


class Clock(Protocol):
    """The clock a config's points are read on (``campaign.parts.clock.ModelClock``)."""

    def sink(
        self, url: str, cfg: BenchConfig, baselines: Mapping[str, BaselineRef] | None = None
    ) -> ResultSink:
        """The sink that re-times one sweep of ``cfg`` against the engine at ``url``."""
        ...

    def live(
        self, cfg: BenchConfig, baselines: Mapping[str, BaselineRef] | None = None
    ) -> tuple[BenchConfig, dict[str, BaselineRef]]:
        """The config and baselines the live sweep runs with."""
        ...


@dataclass
class Held:
    """The config's server while it runs, NVML's used MiB per GPU before its launch and once
    it was ready, and what killed it while it served (``campaign.parts.aftermath``); where it
    runs (``launcher``; None: the default, ``campaign.parts.launch.SUBPROCESS``) and, with
    ``clock``, the clock its points are read on (``campaign.parts.clock``)."""

    server: ServerProcess | None = None
    gpu_before: list[int] | None = None
    gpu_ready: list[int] | None = None
    failure: RuntimeFailure | None = None
    launcher: Launcher | None = None
    clock: Clock | None = None


@dataclass
class ConfigOutcome:
    config: str
    status: str  # measured | skipped | launch-failed | verify-failed | interrupted | failed
    message: str = ""
    run_ids: list[int] = field(default_factory=list)
    remedy: str | None = None
    log_tail: list[str] = field(default_factory=list)

    def failed_by(self, message: str, remedy: str | None, tail: list[str]) -> None:
        """Its server came up, then died of something known: that first (then what was said
        before, cut), its remedy and log tail; a measured config becomes failed."""
        seen = self.message[:300] + ("…" if len(self.message) > 300 else "")
        self.message = message + (f" — {seen}" if seen else "")
        self.remedy, self.log_tail = remedy, tail
        if self.status == "measured":
            self.status = "failed"


class CampaignEvents(BenchEvents):
    """Progress of a campaign (on top of each sweep's own events)."""

    def config_started(self, cfg: ResolvedConfig, index: int, total: int) -> None:
        """A config is about to be launched."""

    def config_done(self, outcome: ConfigOutcome) -> None:
        """A config ended (measured, skipped or failed)."""


def _drop(line: str) -> None:
    """A line nobody reads (``up`` tells no progress)."""


@dataclass
class RunContext:
    """One ``run`` or ``up``: what every config of it shares.

    ``say`` takes what is told (notes, lever lines, files installed); ``progress`` the running
    commentary (``verifying ...``), which ``up`` drops. ``keep``: ``up``'s servers and files are
    left in place and its failures are the command's errors, not outcomes."""

    campaign: CampaignFile
    path: Path
    baseline: ResolvedConfig  # every config's diff and lever evidence are against it
    reference: str  # the config greedy equivalence and the sequential A/B are against
    cpus: CpuSplit
    store: Store | None
    say: Say
    progress: Say = _drop
    events: CampaignEvents = field(default_factory=CampaignEvents)
    no_verify: bool = False
    keep: bool = False
    held: Callable[[], Held] = Held  # a fresh Held per config: the launcher and model clock

    @property
    def name(self) -> str:
        """The campaign's name (its runs, analyses and lock are under it)."""
        return self.campaign.campaign.name

    def record(
        self, config_id: int | None, kind: str, passed: bool, detail: dict[str, Any]
    ) -> None:
        """A verification row of config ``config_id`` (nothing without a store)."""
        if self.store is not None and config_id is not None:
            with self.store.transaction():
                self.store.add_verification(config_id, kind, passed, detail)

    def outcome(self, config: str, status: str, message: str = "", **kw: Any) -> ConfigOutcome:
        return ConfigOutcome(config, status, message, **kw)


@dataclass
class ConfigContext:
    """One config on its way through the stages; each stage fills in what it made."""

    run: RunContext
    cfg: ResolvedConfig  # as launched: with its tuned files (``stages.files``)
    config_id: int | None  # its store row (None: ``up`` without a store)
    held: Held = field(default_factory=Held)
    installed: Installed | None = None
    server: ServerProcess | None = None  # the server this run launched (None: kind openai)
    url: str = ""
    model: str = ""
    log_path: Path | None = None
    verify: VerifyReport | None = None
    levers: list[LeverItem] = field(default_factory=list)
    launch: int = 1  # which launch of the config this is (``[load] launches``; campaign.rounds)

    @property
    def name(self) -> str:
        return self.cfg.name

    def say(self, line: str) -> None:
        self.run.say(line)

    def record(self, kind: str, passed: bool, detail: dict[str, Any]) -> None:
        self.run.record(self.config_id, kind, passed, detail)

    def outcome(self, status: str, message: str = "", **kw: Any) -> ConfigOutcome:
        """This config's outcome (named as the campaign file names it)."""
        return self.run.outcome(self.name, status, message, **kw)


@dataclass(frozen=True)
class Stage:
    """One stage of a config's way to its measurement (``campaign.stages``): ``enter`` is a
    context manager over the config, entered in table order and left in reverse. Every driver
    steps through the same table: ``run`` and ``up`` enter it here (``up`` keeps what the
    stage leaves in place: ``RunContext.keep``); ``run --ray`` enters it in the driver too,
    unless the stage's ``name`` has a form on the server's node (``cluster.task``)."""

    name: str
    enter: Callable[[ConfigContext], AbstractContextManager[None]]

    def __call__(self, cx: ConfigContext) -> AbstractContextManager[None]:
        return self.enter(cx)


#: what runs on a config's live server once its stages are up (``campaign.passes``)
Pass = Callable[[ConfigContext], ConfigOutcome]
#: a config's measuring pass from the plan's load points and the cells still to measure
PassFactory = Callable[[list[LoadPoint], set[tuple[str, int]]], Pass]
