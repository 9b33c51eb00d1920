"""What a sweep produces and reports: load points, their results, warnings, progress events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from inferlab.config.pattern import LoadPattern
from inferlab.records import RequestRecord
from inferlab.stats.metrics import PointSummary
from inferlab.stats.stopping import StopRecord
from inferlab.stats.summary import Distribution
from inferlab.stats.trust import Trust

__all__ = ["BenchEvents", "BenchResult", "BenchWarning", "LoadPoint", "PointResult", "ResultSink"]


@dataclass(frozen=True)
class LoadPoint:
    """One load level: its label and the pattern that offers it (``config.pattern``: its
    streams, schedule, lateness and stored columns)."""

    label: str
    pattern: LoadPattern

    @classmethod
    def of(cls, p: LoadPattern) -> LoadPoint:
        """The point that offers pattern ``p``, under its own label."""
        return cls(p.label, p)

    @property
    def streams(self) -> int:
        """Most requests this point may keep in flight (256 where its pattern sets no bound:
        an estimate, for open loop)."""
        return self.pattern.streams or 256


@dataclass(frozen=True)
class BenchWarning:
    """A measurement-quality warning with the fix that fits the options in use."""

    kind: str
    message: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message, "fix": self.fix}


@dataclass
class PointResult:
    point: LoadPoint
    records: list[RequestRecord]
    summary: PointSummary
    loop_lag_ms: Distribution
    workers: int
    warnings: list[BenchWarning] = field(default_factory=list)
    interrupted: bool = False
    rejected: str | None = None
    trial: int = 0
    started_at: str | None = None  # wall clock, ISO 8601
    ended_at: str | None = None
    clients: dict[str, Any] | None = None  # several load hosts: offsets, bounds (cluster/)
    trust: Trust = field(default_factory=Trust)  # untrusted points never carry a verdict
    stop: StopRecord | None = None  # adaptive points: why and how precisely they stopped
    refused: int = 0  # replay: requests beyond the model's context (``context`` tokens), not sent
    context: int | None = None


@dataclass
class BenchResult:
    run_id: str
    model: str
    url: str
    points: list[PointResult]
    interrupted: bool = False
    engine_version: str | None = None
    engine: str = "openai"  # the engine whose request fields were sent (given or detected)


class ResultSink(Protocol):
    """Where finished load points go, each as soon as it ends (JSONL file, the store...)."""

    def start(self, meta: dict[str, Any]) -> None: ...

    def begin(self, point: LoadPoint, trial: int) -> None:
        """A load point is about to run (e.g. take a /metrics scrape)."""
        ...

    def point(self, res: PointResult) -> None: ...

    def close(self) -> None: ...


class BenchEvents:
    """Progress callbacks; the default does nothing. The CLI renders them with rich."""

    def message(self, text: str) -> None:
        """A status line (preflight, prompt generation...)."""

    def point_started(self, point: LoadPoint, total: int | None, warmup: bool) -> None:
        """A phase starts; ``total`` requests, or None when bounded by duration."""

    def progress(self, done: int, errors: int) -> None:
        """Requests finished so far in the current phase (polled ~10×/s)."""

    def point_finished(self, result: PointResult) -> None:
        """A load point is measured, summarized and (if asked) written."""
