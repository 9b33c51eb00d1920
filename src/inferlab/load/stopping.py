"""The stopping rule of a load point: the protocol, and the monitor that asks it.

A ``StoppingRule`` says when a point has measured enough. ``RuleMonitor`` is the
``load.phase.PhaseMonitor`` that asks it: it keeps the light summaries the workers stream
(``load.progress``), stops at the duration (``max_duration_s``) and the cap (``max_requests``
measured requests) whatever the rule, and at each count of the rule's ``schedule`` (counted
requests: the first request of every user, the ramp-up, never counts) shows it a ``Check``;
the rule answers ``None`` (continue) or ``Stop(reason)``, the reason stored as
``StopRecord.reason``. A check waits until the steady window exists (every user past its
first request). The rules and their registry are in ``load.adaptive``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from inferlab.load.progress import LightRecord
from inferlab.stats.stopping import Precision, StopRecord, precision_of, span_batch_rates

__all__ = ["Check", "RuleMonitor", "Stop", "StoppingRule"]


@dataclass(frozen=True)
class Stop:
    """The rule's answer when the point should stop; ``reason`` is stored as is."""

    reason: str


@dataclass(frozen=True)
class Check:
    """What a rule is shown at one of its checks (times: perf_counter_ns)."""

    requests: int  # counted requests finished so far
    index: int  # 1-based: the index-th check of the schedule
    last: bool  # the schedule's last check, or the cap
    capped: bool  # the cap is reached: the point stops after this check
    records: Sequence[LightRecord]  # every light summary so far, in arrival order
    window: tuple[int, int]  # (end of the ramp-up, earliest send still in flight)
    concurrency: int
    seed: int

    @cached_property
    def precision(self) -> Precision:
        """The 95% intervals of median TPOT and output throughput over this check's records."""
        counted = sorted((r for r in self.records if not r.ramp), key=lambda r: r.send_ns)
        tpots = [t for t in (r.tpot_ms for r in counted) if t is not None]
        good = [r for r in self.records if r.ok]
        rates = span_batch_rates(
            [r.first_ns for r in good],
            [r.last_ns for r in good],
            [r.tokens for r in good],
            *self.window,
        )
        return precision_of(tpots, rates, self.concurrency, seed=self.seed)


class StoppingRule(Protocol):
    """When one load point has measured enough (see the module docstring)."""

    #: asked while the point runs (its workers stream summaries); False: the workers stop at
    #: their count or duration by themselves and the point has no stop record
    live: bool

    def schedule(self) -> Sequence[int]:
        """Counted requests at which the rule is asked, ascending."""
        ...

    def check(self, at: Check) -> Stop | None:
        """At one scheduled count (or the cap): ``None`` to continue, else why to stop."""
        ...

    def fill(self, stop: StopRecord) -> None:
        """Add what the rule knows (its precision target, looks, test state) to the record."""
        ...


def _window(
    records: Sequence[LightRecord], inflight: dict[int, int | None], c: int
) -> tuple[int, int] | None:
    """[end of the ramp-up, earliest send still in flight): tokens in it are all reported."""
    ramp = [r for r in records if r.ramp]
    if len(ramp) < c:
        return None
    w0 = max(r.end_ns for r in ramp)
    open_ = [t for t in inflight.values() if t is not None]
    w1 = min(open_) if open_ else max(r.end_ns for r in records)
    return (w0, w1) if w1 > w0 else None


@dataclass
class RuleMonitor:
    """A ``load.phase.PhaseMonitor`` asking one rule (see the module docstring); ``clock``:
    ns, for the duration only."""

    rule: StoppingRule
    concurrency: int
    max_requests: int  # 0: no cap
    max_duration_s: float | None
    seed: int = 0
    clock: Callable[[], int] = time.perf_counter_ns
    started_ns: int | None = None  # None: now
    records: list[LightRecord] = field(default_factory=list)
    inflight: dict[int, int | None] = field(default_factory=dict)
    reason: str | None = None
    checks: list[int] = field(default_factory=list)
    counted: int = 0  # finished requests that are not ramp-up
    _next: int = 0

    def __post_init__(self) -> None:
        if self.started_ns is None:
            self.started_ns = self.clock()

    def progress(self, worker: int, payload: Any) -> None:
        recs, inflight_min = payload
        self.records.extend(recs)
        self.counted += sum(1 for r in recs if not r.ramp)
        self.inflight[worker] = inflight_min

    def should_finish(self, done: int) -> bool:
        """``done``: requests finished so far (the workers' shared counters, exact and
        immediate: the cap is enforced from it, not from the summaries still in flight)."""
        if self.reason is not None:
            return True
        assert self.started_ns is not None
        if self.max_duration_s and self.clock() - self.started_ns >= self.max_duration_s * 1e9:
            self.reason = "duration"
            return True
        n = self.counted
        cap = bool(self.max_requests) and done - self.concurrency >= self.max_requests
        due = self.rule.schedule()
        if not cap and (self._next >= len(due) or n < due[self._next]):
            return False
        window = _window(self.records, self.inflight, self.concurrency)
        if window is not None:
            self._next += 1
            self.checks.append(n)
            last = cap or self._next >= len(due)
            at = Check(n, self._next, last, cap, self.records, window, self.concurrency, self.seed)
            stop = self.rule.check(at)
            if stop is not None:
                self.reason = stop.reason
        if self.reason is None and cap:
            self.reason = "cap"
        return self.reason is not None
