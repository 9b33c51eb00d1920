"""What a load pattern does for the load generator: schedule, streams, alone, lateness.

``Behaviour`` is the base of every pattern (``config.pattern.LoadPattern`` adds the label and
JSON): its ``schedule`` reads a ``Budget``, may ask the sweep's ``Tools`` and returns a
``Schedule``, which ``load.point`` runs; ``alone()`` is its one-point ``[load]``; its
``Lateness`` says what a late send means for it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

__all__ = ["RUN_COLUMNS", "Behaviour", "Budget", "Lateness", "Schedule", "Tools"]

#: a stored run's load columns (``store``: runs.concurrency, rate, max_concurrency)
RUN_COLUMNS = ("concurrency", "rate", "max_concurrency")


class Budget(Protocol):
    """What a point's schedule reads of its sweep's settings (a ``BenchConfig`` is one)."""

    @property
    def requests(self) -> int | str | None: ...
    @property
    def duration_s(self) -> float | None: ...
    @property
    def max_requests(self) -> int: ...
    @property
    def adaptive(self) -> bool: ...


@dataclass(frozen=True)
class Schedule:
    """How one point sends its requests, in the terms ``load.point`` runs: ``prompts`` of the
    workload (the warm-up's apart), sent by ``streams`` closed-loop users, each its next as its
    last ends (``cycle``: round again until the point stops), or at ``offsets`` (s from the
    start; at most ``streams`` in flight when given); with ``turns``, as ``prompts // turns``
    conversations of that many turns, ``think_s`` s between an answer and the next turn.
    ``given``: the (warm-up, measured) prompts the pattern brings itself (a trace's) in place
    of the workload's; ``refused``: its requests left out (over the model's context)."""

    prompts: int
    streams: int | None = None
    offsets: list[float] | None = None
    cycle: bool = False
    turns: int | None = None
    think_s: float = 0.0
    given: tuple[Sequence[Any], Sequence[Any]] | None = None
    refused: int = 0


class Tools(Protocol):
    """What a pattern's schedule may ask of the sweep that runs it (``load.point`` gives it)."""

    def arrivals(
        self,
        rate: float,
        arrival: str,
        burstiness: float,
        count: int | None,
        duration_s: float | None,
    ) -> list[float]:
        """Send times (s from the start) of a renewal process at ``rate`` req/s."""
        ...

    def trace(self, pattern: Any) -> Schedule:
        """A replay's schedule: its trace's requests, prompts made to their lengths."""
        ...


@dataclass(frozen=True)
class Lateness:
    """What a send late against a point's schedule means: ``warns``: a send-lag warning
    (``load.quality``); ``untrusts``: its p99 enters the trust rule (``stats.trust``);
    ``on_schedule``: on the model clock its sends are put at their scheduled times
    (``campaign.clock``, ``late_ms`` after them). None of them: it has no schedule."""

    warns: bool = False
    untrusts: bool = False
    on_schedule: bool = False


class Behaviour(ABC):
    """What every load pattern does (``config.pattern.LoadPattern`` is one)."""

    #: ``streams`` users, each sending its next request as soon as its last one ends
    closed_loop: ClassVar[bool] = False
    #: whether ``requests`` or ``duration_s`` counts its requests (a trace, sessions: their own)
    counted: ClassVar[bool] = True
    #: whether a run's summary keeps the whole pattern (``to_json``): its label does not say all
    stored_whole: ClassVar[bool] = True
    #: which of a run row's load columns (``RUN_COLUMNS``) are its fields
    run_columns: ClassVar[tuple[str, ...]] = ()

    @property
    @abstractmethod
    def streams(self) -> int | None:
        """Most requests in flight it allows; None: no bound of its own."""

    @abstractmethod
    def schedule(self, budget: Budget, tools: Tools) -> Schedule:
        """How this point sends its requests under ``budget``."""

    @property
    def loop_concurrency(self) -> int | None:
        """Its closed-loop users (the C of stopping rules and budgets); None: not a closed loop."""
        return self.streams if self.closed_loop else None

    @property
    def lateness(self) -> Lateness:
        """What a late send means for it (default: nothing, no schedule)."""
        return Lateness()

    def columns(self) -> dict[str, Any]:
        """A run row's load columns (``RUN_COLUMNS``), None where not its (``run_columns``)."""
        return {k: getattr(self, k) if k in self.run_columns else None for k in RUN_COLUMNS}

    def alone(self) -> dict[str, Any]:
        """The ``[load]`` fields that offer this pattern alone, beside empty others (a
        profiled or recheck pass): its flat spelling, or ``points = [self]``."""
        return {"points": [self]}
