"""What the sinks gather from one log (``LogState``: bounded, nothing grows with the log's
size); ``inferlab.logs.readout`` turns it into model objects."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inferlab.logs.model import Milestone, SeriesPoint, TunedConfig

__all__ = [
    "LEVEL_CAP",
    "LINES_CAP",
    "SERIES_CAP",
    "LogState",
    "Oom",
    "Shape",
    "SpecStats",
    "lines_add",
]

#: series points kept in memory (thinned by 2 when full)
SERIES_CAP = 2048
#: gen-throughput samples kept per running-request level (reservoir)
LEVEL_CAP = 256
#: evidence lines kept per item
LINES_CAP = 20

_TIME = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d|\b\d\d-\d\d \d\d:\d\d:\d\d")


def lines_add(lst: list[int], line: int) -> None:
    if len(lst) < LINES_CAP and (not lst or lst[-1] != line):
        lst.append(line)


@dataclass(slots=True)
class _Level:
    """Gen-throughput samples at one running-request count (a bounded reservoir)."""

    n: int = 0
    samples: list[float] = field(default_factory=list)
    first_line: int = 0

    def add(self, v: float, getrandbits: Callable[[int], int]) -> None:
        """Keep ``v`` with probability LEVEL_CAP / n (reservoir sampling). The slot is drawn
        uniformly from [0, n) by rejection on ``getrandbits``, as ``random.randrange`` does."""
        self.n += 1
        if len(self.samples) < LEVEL_CAP:
            self.samples.append(v)
            return
        n = self.n
        k = n.bit_length()
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        if j < LEVEL_CAP:
            self.samples[j] = v


@dataclass
class SpecStats:
    """Speculative decoding as logged: accept length (tokens per step incl. the bonus token)."""

    n: int = 0
    total: float = 0.0
    lo: float = float("inf")
    hi: float = 0.0
    rate_n: int = 0
    rate_total: float = 0.0
    lines: list[int] = field(default_factory=list)
    #: drafted tokens per step, as the metrics line shows it (per-position list, V0 k)
    draft_tokens: int | None = None
    draft_tokens_line: int | None = None

    def add(self, line: int, accept_len: float, rate: float | None) -> None:
        """One logged accept length (and acceptance rate, a fraction)."""
        self.n += 1
        self.total += accept_len
        self.lo = min(self.lo, accept_len)
        self.hi = max(self.hi, accept_len)
        if rate is not None:
            self.rate_n += 1
            self.rate_total += rate
        lines_add(self.lines, line)


@dataclass
class Shape:
    """A kernel shape seen on an untuned config: its key, lines, and what else the line said."""

    key: tuple[Any, ...]
    lines: list[int]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Oom:
    """One CUDA OOM event (lines within ``OOM_GAP`` of each other), as it is being gathered."""

    where: str
    where_from: str
    lines: list[int]
    message: str
    asked: str | None = None
    free: str | None = None
    total: str | None = None
    gpu: int | None = None
    last: int = 0


@dataclass
class LogState:
    """What the sinks gathered from one log (bounded: nothing grows with the log's size)."""

    path: str
    engine: str | None = None  # forced engine: formats of other engines are skipped
    detected: str | None = None  # the engine found (set before the detectors run)
    engine_hits: dict[str, int] = field(default_factory=dict)
    markers: dict[str, int] = field(default_factory=dict)
    simulated: bool = False
    #: the primary fatal line of the log's end, classified by the engine's signatures
    #: (``inferlab.engines``): (engine, kind, line, text, remedy)
    launch_failure: tuple[str, str, int, str, str] | None = None
    phase: str | None = None
    series: list[SeriesPoint] = field(default_factory=list)
    series_total: int = 0
    series_stride: int = 1
    primary_rank: dict[str, str | None] = field(default_factory=dict)
    levels: dict[int, _Level] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    getrandbits: Callable[[int], int] = field(init=False, repr=False, compare=False)
    load: dict[str, Any] = field(default_factory=dict)  # queue / KV counters
    spec: SpecStats = field(default_factory=SpecStats)
    flags: dict[str, dict[str, Any]] = field(default_factory=dict)
    gemms: dict[tuple[Any, ...], Shape] = field(default_factory=dict)
    tuned_gemms: dict[tuple[Any, ...], TunedConfig] = field(default_factory=dict)
    moes: dict[tuple[Any, ...], Shape] = field(default_factory=dict)
    tuned_moes: dict[tuple[Any, ...], TunedConfig] = field(default_factory=dict)
    ooms: list[Oom] = field(default_factory=list)
    remedies: list[str] = field(default_factory=list)
    remedies_line: int | None = None
    capture_failures: list[tuple[int, str]] = field(default_factory=list)
    #: the first CUDA-graph capture start line since the last capture end line, and that end
    capture_begin: int | None = None
    capture_end: int | None = None
    #: a traceback in the log's end that begins after an unfinished capture (``traceback``)
    capture_traceback: dict[str, Any] | None = None
    nccl_errors: dict[str, list[int]] = field(default_factory=dict)
    nccl_warns: dict[str, list[int]] = field(default_factory=dict)
    nccl_timeouts: list[dict[str, Any]] = field(default_factory=list)
    advice: dict[str, list[int]] = field(default_factory=dict)
    advice_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    milestones: dict[str, Milestone] = field(default_factory=dict)
    slots: list[dict[str, Any]] = field(default_factory=list)
    #: batch-line heads seen last and the rank in each (``inferlab.logs.sinks.rank``)
    rank_cache: dict[str, str | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.getrandbits = self.rng.getrandbits

    # -- helpers used by the sinks ------------------------------------------------------------
    def hit(self, engine: str | None) -> None:
        if engine is not None:
            self.engine_hits[engine] = self.engine_hits.get(engine, 0) + 1

    def add_point(
        self,
        line: int,
        kind: str,
        head: str,
        rank: str | None,
        running: int | None = None,
        queued: int | None = None,
        gen_tps: float | None = None,
        kv_usage: float | None = None,
        accept_len: float | None = None,
        prompt_tps: float | None = None,
    ) -> None:
        """Count one stats line (of the primary rank of its kind) and keep it in the thinned
        series; ``head`` is the text before the message (its timestamp, if any)."""
        if rank is not None and self.primary_rank.setdefault(kind, rank) != rank:
            return  # another TP/DP rank or engine: the series follows the first one seen
        if kind == "decode" or kind == "stats":
            if running and gen_tps is not None:
                lv = self.levels.get(running)
                if lv is None:
                    lv = self.levels[running] = _Level(first_line=line)
                lv.add(gen_tps, self.getrandbits)
            if queued is not None:
                ld = self.load  # _load's first lines, inline
                ld["samples"] = ld.get("samples", 0) + 1
                if kv_usage is not None and kv_usage > ld.get("max_kv", 0.0):
                    ld["max_kv"] = kv_usage
                if queued > 0:
                    self._queued(line, running, queued, kv_usage)
        n = self.series_total = self.series_total + 1
        if (n - 1) % self.series_stride:
            return
        tm = _TIME.search(head)
        self.series.append(
            SeriesPoint(
                line,
                kind,
                tm.group(0) if tm else None,
                rank,
                running,
                queued,
                gen_tps,
                kv_usage,
                accept_len,
                prompt_tps,
            )
        )
        if len(self.series) >= SERIES_CAP:
            self.series = self.series[::2]
            self.series_stride *= 2

    def _queued(self, line: int, running: int | None, queued: int, kv: float | None) -> None:
        """A stats line with requests waiting (``queued`` > 0)."""
        ld = self.load
        ld["queued"] = ld.get("queued", 0) + 1
        ld["max_queue"] = max(ld.get("max_queue", 0), queued)
        lines_add(ld.setdefault("queued_lines", []), line)
        if kv is not None and kv >= 0.9:
            ld["full"] = ld.get("full", 0) + 1
            lines_add(ld.setdefault("full_lines", []), line)
        elif kv is not None:
            ld["below_kv"] = max(ld.get("below_kv", 0.0), kv)
            ld["below"] = ld.get("below", 0) + 1
        if running is not None:
            ld["queued_running_max"] = max(ld.get("queued_running_max", 0), running)

    def flag(self, name: str, value: str, line: int) -> None:
        if name not in self.flags:
            self.flags[name] = {"value": value, "line": line}

    def milestone(
        self, name: str, line: int, text: str, values: dict[str, Any], engine: str | None
    ) -> None:
        old = self.milestones.get(name)
        if old is not None:
            self.milestones[name] = Milestone(
                old.name, old.line, old.time, old.values, old.engine, old.count + 1
            )
            return
        m = _TIME.search(text)
        self.milestones[name] = Milestone(name, line, m.group(0) if m else None, values, engine, 1)
