"""What log mining produces: findings, untuned kernel shapes, a time series and a timeline."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from inferlab.engines import specs
from inferlab.picks import pick

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "ENGINES",
    "Finding",
    "LogAnalysis",
    "Milestone",
    "OomEvent",
    "SeriesPoint",
    "Severity",
    "TunedConfig",
    "UntunedGemm",
    "UntunedMoe",
]

Severity = Literal["info", "warning", "error"]


class _Engines(Mapping[str, str]):
    """Engine → display name of every registered engine whose logs are recognised (it has
    ``EngineSpec.logs``), in registry order, read from the registry at each use."""

    def _names(self) -> dict[str, str]:
        return {s.name: s.logs.display for s in specs() if s.logs is not None}

    def __getitem__(self, name: str) -> str:
        return self._names()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


#: engines whose logs are recognised, with their display names
ENGINES: Mapping[str, str] = _Engines()


@dataclass(frozen=True)
class Finding:
    """One thing the log shows, with the lines that show it and what to do about it.

    ``evidence`` always has ``lines`` (1-based line numbers in the log, at most 20) and the
    values the message quotes."""

    kind: str
    severity: Severity
    message: str
    evidence: dict[str, Any]
    action: str | None = None

    def to_dict(self) -> dict[str, JsonValue]:
        return asdict(self)


@dataclass(frozen=True)
class UntunedGemm:
    """A W8A8 block-FP8 GEMM shape the engine ran with its default Triton config.

    ``device`` is the name as printed in the log (e.g. ``NVIDIA_H100_80GB_HBM3``)."""

    n: int
    k: int
    device: str
    dtype: str
    block_shape: tuple[int, int] | None
    lines: tuple[int, ...]
    #: the directory the engine looked in (``Config file not found at <dir>/N=…``), if printed
    dir: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class UntunedMoe:
    """A fused-MoE shape without a tuned config for this GPU.

    ``reason``: ``default`` (the engine's default config), ``down`` (no ``_down`` config for
    the second GEMM), ``fallback`` (a config tuned for another Triton version, in
    ``triton_version``)."""

    e: int
    n: int
    device: str
    dtype: str | None
    lines: tuple[int, ...]
    block_shape: tuple[int, int] | None = None
    reason: str = "default"
    triton_version: str | None = None


@dataclass(frozen=True)
class TunedConfig:
    """A ``Using configuration from <file>`` line: this shape ran on a tuned file."""

    kernel: str  # "fp8-gemm" | "moe"
    shape: dict[str, Any]
    path: str
    line: int


@dataclass(frozen=True)
class Milestone:
    """A startup (or shutdown) step: ``name`` (e.g. ``weights-loaded``), its first line, the
    log's own timestamp when it has one, and the values the line states (units in the key)."""

    name: str
    line: int
    time: str | None
    values: dict[str, Any]
    engine: str | None = None
    count: int = 1


@dataclass(frozen=True)
class OomEvent:
    """A CUDA out-of-memory failure. ``where``: ``graph-capture``, ``weight-loading``,
    ``kv-cache``, ``sampler-warmup``, ``warm-up``, ``serving`` or ``unknown``; ``where_from``:
    ``message`` (the error says so) or ``phase`` (the last startup step before it).
    Amounts are as printed (``asked`` = "Tried to allocate", ``free``, ``total`` capacity)."""

    where: str
    where_from: str
    lines: tuple[int, ...]
    message: str
    asked: str | None = None
    free: str | None = None
    total: str | None = None
    gpu: int | None = None


@dataclass(slots=True)
class SeriesPoint:
    """One periodic stats line. ``kind``: ``decode`` / ``prefill`` (SGLang batch lines),
    ``stats`` (vLLM engine stats), ``spec`` (speculative-decoding metrics). ``gen_tps`` is the
    engine's generation throughput (tokens/s, over its logging interval); ``kv_usage`` is a
    fraction 0–1 of the KV cache in use; ``accept_len`` is tokens per sequence per step,
    including the bonus token."""

    line: int
    kind: str
    time: str | None = None
    rank: str | None = None
    running: int | None = None
    queued: int | None = None
    gen_tps: float | None = None
    kv_usage: float | None = None
    accept_len: float | None = None
    prompt_tps: float | None = None


@dataclass
class LogAnalysis:
    """Everything mined from one log. ``engine`` is None when no line of a known engine was
    found (``looked_for`` says what was tried). The series is thinned to at most
    ``series_cap`` points by keeping every ``series_stride``-th of ``series_total``."""

    path: str
    engine: str | None
    lines: int
    bytes: int
    visited: int
    engine_hits: dict[str, int]
    findings: list[Finding] = field(default_factory=list)
    series: list[SeriesPoint] = field(default_factory=list)
    series_total: int = 0
    series_stride: int = 1
    timeline: list[Milestone] = field(default_factory=list)
    flags: dict[str, dict[str, Any]] = field(default_factory=dict)
    untuned_gemms: list[UntunedGemm] = field(default_factory=list)
    untuned_moe: list[UntunedMoe] = field(default_factory=list)
    tuned: list[TunedConfig] = field(default_factory=list)
    ooms: list[OomEvent] = field(default_factory=list)
    compressed: str | None = None
    truncated: bool = False
    simulated: bool = False
    forced_engine: bool = False
    requested: str | None = None
    looked_for: list[str] = field(default_factory=list)
    found: str | None = None
    seconds: float = 0.0

    @property
    def recognized(self) -> bool:
        """A known engine's lines, or at least one engine-neutral finding (OOM, NCCL, ...)."""
        return self.engine is not None or bool(self.findings)

    def unknown_reason(self) -> str:
        """Why this file was not taken for a log of a known engine: what was looked for, and
        what was found instead."""
        names = list(ENGINES.values())
        want = ENGINES.get(self.requested or "") or (", ".join(names[:-1]) + " or " + names[-1])
        return (
            f"{self.path}: no {want} lines among {self.lines:,} lines; looked for "
            + "; ".join(self.looked_for)
            + (f"; found {self.found}" if self.found else "")
        )

    def to_json(self) -> dict[str, JsonValue]:
        return {
            **pick(self, "path", "engine", "recognized", "simulated", "lines", "bytes"),
            "lines_visited": self.visited,
            **pick(self, "compressed", "truncated", "engine_hits"),
            "seconds": round(self.seconds, 4),
            "findings": [f.to_dict() for f in self.findings],
            "series": {
                "total": self.series_total,
                "stride": self.series_stride,
                "points": [_compact(asdict(p)) for p in self.series],
            },
            "timeline": [asdict(m) for m in self.timeline],
            "flags": self.flags,
            "untuned_fp8_gemms": [asdict(g) for g in self.untuned_gemms],
            "untuned_moe": [asdict(m) for m in self.untuned_moe],
            "tuned_configs": [asdict(t) for t in self.tuned],
            "ooms": [asdict(o) for o in self.ooms],
        }


def _compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}
