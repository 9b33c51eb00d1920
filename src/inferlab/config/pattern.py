"""Load patterns: how one load point offers its requests, its label and its stored JSON.

A label is what reports and store rows show (``C=16``, ``rate=4/s``, ``rate=4/s max C=8``);
``label`` writes it, the same bytes as ever, and ``LoadPattern.parse`` reads it back (and the
spellings imported runs use: ``rate=inf``, ``C=8,rate=4/s``). The label carries the rate and
the concurrency cap, not the arrival process: a parsed open-loop label has the default arrival
(``to_json`` keeps all of it). A replay label (``replay:mooncake@1.0x``) names the trace's
format and speed, not its file or slice: a parsed one has no file (``to_json`` keeps them).
A sessions label (``sessions:4x8``) names users and turns, not the think time. Each variant is
one class in ``PATTERNS``, which also carries its behaviour (``config.schedule.Behaviour``): a
new pattern is one class and one line there; ``[[load.points]] kind = ...`` spells it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import Field, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from inferlab.config.schedule import Behaviour, Budget, Lateness, Schedule, Tools
from inferlab.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "PATTERNS",
    "Arrival",
    "ClosedLoop",
    "LoadPattern",
    "OpenLoop",
    "Replay",
    "Sessions",
    "closed_concurrency",
    "label_key",
]

Arrival = Literal["poisson", "gamma"]


class LoadPattern(Behaviour):
    """One load point's pattern: its label and JSON here, its behaviour from ``Behaviour``;
    subclasses are frozen dataclasses registered in PATTERNS."""

    kind: ClassVar[str]  # the JSON ``kind``
    spellings: ClassVar[tuple[str, ...]]  # the label forms it reads, for error messages
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # set by each subclass's @dataclass

    @property
    @abstractmethod
    def label(self) -> str:
        """The label reports and store rows show."""

    @property
    @abstractmethod
    def size(self) -> float:
        """What labels of its kind sort by (concurrency, rate)."""

    def fields(self) -> dict[str, JsonValue]:
        """Its fields as JSON values, in declared order (``to_json`` adds the kind;
        ``from_json`` reads them back as the constructor's keywords)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    @abstractmethod
    def from_label(cls, label: str) -> LoadPattern | None:
        """The pattern a label in one of its ``spellings`` names; None for any other label."""

    def to_json(self) -> dict[str, JsonValue]:
        return {"kind": self.kind, **self.fields()}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> LoadPattern:
        """A stored pattern; ConfigError naming an unknown or malformed one."""
        kind = str(data.get("kind"))
        cls = PATTERNS.get(kind)
        if cls is None:
            raise ConfigError(f"unknown load pattern kind {kind!r}; expected {', '.join(PATTERNS)}")
        try:
            return cls(**{k: v for k, v in data.items() if k != "kind"})
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"load pattern {kind!r}: {exc}") from None

    @staticmethod
    def parse(label: str) -> LoadPattern:
        """The pattern a label names; ConfigError for a label no variant reads."""
        for cls in PATTERNS.values():
            found = cls.from_label(label)
            if found is not None:
                return found
        forms = ", ".join(s for cls in PATTERNS.values() for s in cls.spellings)
        raise ConfigError(f"not a load point label: {label!r} (expected {forms})")


@dataclass(frozen=True)
class ClosedLoop(LoadPattern):
    """``concurrency`` users, each sending its next request when the last one ends."""

    concurrency: int

    kind: ClassVar[str] = "closed"
    spellings: ClassVar[tuple[str, ...]] = ("C=N",)
    closed_loop: ClassVar[bool] = True
    stored_whole: ClassVar[bool] = False
    run_columns: ClassVar[tuple[str, ...]] = ("concurrency",)
    #: its prompts when not counted (a duration, no cap): 8 waves of its users, in [256, 4096]
    _WAVES: ClassVar[tuple[int, int, int]] = (8, 256, 4096)
    _LABEL: ClassVar[re.Pattern[str]] = re.compile(r"C=(\d+)")

    def __post_init__(self) -> None:
        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int):
            raise ValueError(f"concurrency must be an integer, got {self.concurrency!r}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be ≥ 1, got {self.concurrency}")

    @property
    def label(self) -> str:
        return f"C={self.concurrency}"

    @property
    def streams(self) -> int:
        return self.concurrency

    @property
    def size(self) -> float:
        return float(self.concurrency)

    def schedule(self, budget: Budget, tools: Tools) -> Schedule:
        """``requests`` prompts; adaptive and capped: the cap and a ramp-up and drain wave,
        cycled; else (a duration, no cap) ``_WAVES`` waves, cycled until it stops."""
        c = self.concurrency
        if budget.adaptive and budget.max_requests:  # the cap counts measured requests
            return Schedule(budget.max_requests + 2 * c, c, cycle=True)
        if isinstance(budget.requests, int):
            return Schedule(budget.requests, c)
        waves, fewest, most = self._WAVES
        return Schedule(min(most, max(fewest, waves * c)), c, cycle=True)

    def alone(self) -> dict[str, Any]:
        return {"concurrency": [self.concurrency]}

    @classmethod
    def from_label(cls, label: str) -> ClosedLoop | None:
        m = cls._LABEL.fullmatch(label)
        return cls(int(m.group(1))) if m and int(m.group(1)) >= 1 else None


class _Capped(LoadPattern):
    """An open-loop pattern with at most ``max_concurrency`` requests in flight (None: no cap)."""

    max_concurrency: int | None

    def _check_cap(self) -> None:
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be ≥ 1, got {self.max_concurrency}")

    def _cap_text(self) -> str:
        """`` max C=N`` in a label; nothing uncapped."""
        return f" max C={self.max_concurrency}" if self.max_concurrency else ""

    @property
    def streams(self) -> int | None:
        return self.max_concurrency


@dataclass(frozen=True)
class OpenLoop(_Capped):
    """Requests arriving at ``rate`` per second (inf: all at once), Poisson or gamma
    (``burstiness`` < 1 burstier), at most ``max_concurrency`` in flight when given."""

    rate: float
    arrival: Arrival = "poisson"
    burstiness: float = 1.0
    max_concurrency: int | None = None

    kind: ClassVar[str] = "open"
    stored_whole: ClassVar[bool] = False
    run_columns: ClassVar[tuple[str, ...]] = ("rate", "max_concurrency")
    spellings: ClassVar[tuple[str, ...]] = ("rate=R/s", "rate=R/s max C=N", "rate=inf")
    #: ``rate=4/s``, ``rate=4/s max C=8``; imported runs' spellings, read to the same pattern
    #: (whose ``label`` is the one above): ``rate=inf`` (all at once), ``C=8,rate=4/s``
    _LABEL: ClassVar[re.Pattern[str]] = re.compile(
        r"rate=(?:(?P<inf>inf)|(?P<rate>[^/ ]+)/s)(?: max C=(?P<cap>\d+))?"
        r"|C=(?P<icap>\d+),rate=(?P<irate>[^/ ]+)/s"
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", float(self.rate))  # "inf" from JSON, ints from TOML
        if not self.rate > 0:
            raise ValueError(f"rate must be > 0 requests/s, got {self.rate}")
        if self.arrival not in ("poisson", "gamma"):
            raise ValueError(f"arrival must be poisson or gamma, got {self.arrival!r}")
        if not self.burstiness > 0:
            raise ValueError(f"burstiness must be > 0, got {self.burstiness}")
        self._check_cap()

    @property
    def label(self) -> str:
        return f"rate={self.rate:g}/s{self._cap_text()}"

    @property
    def size(self) -> float:
        return self.rate

    def fields(self) -> dict[str, JsonValue]:
        """An infinite rate is the string ``"inf"`` (JSON has no infinity)."""
        out = super().fields()
        return out | {"rate": "inf"} if math.isinf(self.rate) else out

    def schedule(self, budget: Budget, tools: Tools) -> Schedule:
        """Arrivals drawn for ``requests`` sends or over ``duration_s``."""
        count = budget.requests if isinstance(budget.requests, int) else None
        offsets = tools.arrivals(self.rate, self.arrival, self.burstiness, count, budget.duration_s)
        return Schedule(len(offsets), self.max_concurrency, offsets)

    @property
    def lateness(self) -> Lateness:
        """Uncapped, a late send is the client's lag (a warning); capped, it is the cap's."""
        return Lateness(warns=self.max_concurrency is None)

    def alone(self) -> dict[str, Any]:
        return {"rate": [self.rate]} | {k: v for k, v in self.fields().items() if k != "rate"}

    @classmethod
    def from_label(cls, label: str) -> OpenLoop | None:
        m = cls._LABEL.fullmatch(label)
        if m is None:
            return None
        cap = m.group("cap") or m.group("icap")
        try:
            rate = math.inf if m.group("inf") else float(m.group("rate") or m.group("irate"))
            return cls(rate, max_concurrency=int(cap) if cap else None)
        except ValueError:
            return None


def _speed_text(speed: float) -> str:
    """``1.0``, ``2.5``, ``0.25``: always with a decimal point."""
    s = f"{speed:g}"
    return s if "." in s or "e" in s or "inf" in s else s + ".0"


@dataclass(frozen=True)
class Replay(_Capped):
    """The requests of a trace (``trace``, in ``format``) sent at their timestamps divided by
    ``speed`` (open loop), at most ``max_concurrency`` in flight when given; ``limit`` and the
    window [``start_s``, ``end_s``) (s from the trace's first request) take a slice."""

    format: str
    speed: float = 1.0
    trace: str | None = None  # the file; None: read back from a label
    max_concurrency: int | None = None
    limit: int | None = None
    start_s: float = 0.0
    end_s: float | None = None

    kind: ClassVar[str] = "replay"
    counted: ClassVar[bool] = False
    run_columns: ClassVar[tuple[str, ...]] = ("max_concurrency",)
    #: its fields as ``[load]`` spells them (``alone``)
    _FLAT: ClassVar[dict[str, str]] = {
        k: "trace_" + k for k in ("format", "limit", "start_s", "end_s")
    }
    spellings: ClassVar[tuple[str, ...]] = ("replay:FORMAT@Xx", "replay:FORMAT@Xx max C=N")
    _LABEL: ClassVar[re.Pattern[str]] = re.compile(
        r"replay:(?P<fmt>[a-z0-9_-]+)@(?P<speed>[0-9.e+-]+)x(?: max C=(?P<cap>\d+))?"
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "speed", float(self.speed))
        object.__setattr__(self, "start_s", float(self.start_s))
        if not (self.speed > 0 and math.isfinite(self.speed)):
            raise ValueError(f"speed must be a finite number > 0, got {self.speed}")
        self._check_cap()
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be ≥ 1, got {self.limit}")
        if self.start_s < 0 or (self.end_s is not None and self.end_s <= self.start_s):
            raise ValueError(f"window must be 0 ≤ start < end, got {self.start_s}:{self.end_s}")

    @property
    def label(self) -> str:
        return f"replay:{self.format}@{_speed_text(self.speed)}x{self._cap_text()}"

    @property
    def size(self) -> float:
        return self.speed

    def schedule(self, budget: Budget, tools: Tools) -> Schedule:
        """The trace's own requests at its timestamps ÷ speed (``load.replay``)."""
        return tools.trace(self)

    @property
    def lateness(self) -> Lateness:
        """Uncapped, a send late against the trace is no longer the trace: untrusted."""
        return Lateness(untrusts=self.max_concurrency is None, on_schedule=True)

    def alone(self) -> dict[str, Any]:
        return {self._FLAT.get(k, k): v for k, v in self.fields().items()} | {"speed": [self.speed]}

    @classmethod
    def from_label(cls, label: str) -> Replay | None:
        m = cls._LABEL.fullmatch(label)
        if m is None:
            return None
        try:
            cap = int(m.group("cap")) if m.group("cap") else None
            return cls(m.group("fmt"), float(m.group("speed")), max_concurrency=cap)
        except ValueError:
            return None


@dataclass(frozen=True)
class Sessions(LoadPattern):
    """``users`` conversations of ``turns`` turns each, run at once: a user sends its next turn
    ``think_s`` seconds after the last answer ended, resending the whole history with that
    answer in it, so prompts grow turn by turn (where a prefix cache shows)."""

    users: int
    turns: int
    think_s: float = 0.0

    kind: ClassVar[str] = "sessions"
    counted: ClassVar[bool] = False
    stored_whole: ClassVar[bool] = False
    spellings: ClassVar[tuple[str, ...]] = ("sessions:UxT",)
    _LABEL: ClassVar[re.Pattern[str]] = re.compile(r"sessions:(\d+)x(\d+)")

    def __post_init__(self) -> None:
        for name in ("users", "turns"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer ≥ 1, got {v!r}")
        object.__setattr__(self, "think_s", float(self.think_s))
        if not self.think_s >= 0:
            raise ValueError(f"think_s must be ≥ 0 seconds, got {self.think_s}")

    @property
    def label(self) -> str:
        return f"sessions:{self.users}x{self.turns}"

    @property
    def streams(self) -> int:
        return self.users

    @property
    def size(self) -> float:
        return float(self.users)

    def schedule(self, budget: Budget, tools: Tools) -> Schedule:
        """One user message per turn of every conversation."""
        return Schedule(self.users * self.turns, self.users, turns=self.turns, think_s=self.think_s)

    def alone(self) -> dict[str, Any]:
        return {"sessions": [self.fields()]}

    @classmethod
    def from_label(cls, label: str) -> Sessions | None:
        m = cls._LABEL.fullmatch(label)
        if m is None or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            return None
        return cls(int(m.group(1)), int(m.group(2)))


#: every built variant, by JSON kind; ``parse`` tries them in this order
PATTERNS: dict[str, type[LoadPattern]] = {
    c.kind: c for c in (ClosedLoop, OpenLoop, Replay, Sessions)
}


def closed_concurrency(label: str | None) -> int | None:
    """The concurrency of a closed-loop label (``C=16``); None for any other label, or none."""
    found = ClosedLoop.from_label(label or "")
    return found.concurrency if found is not None else None


def label_key(label: str) -> tuple[int, float, str]:
    """Sort key of a load label: by variant (PATTERNS order: C=N, open loop, replay,
    sessions), then by its size (N, rate, speed, users), then by name; a label no variant
    reads sorts last, by name."""
    try:
        p = LoadPattern.parse(label)
    except ConfigError:
        return (len(PATTERNS), 0.0, label)
    return (list(PATTERNS).index(p.kind), p.size, label)
