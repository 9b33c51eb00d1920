"""Clocks of several load hosts on one timeline (pure: no Ray here).

Every latency is a difference of two readings of one host's monotonic clock, so it is exact
whatever the other hosts' clocks say; records merge as they are for TTFT, TPOT, ITL and E2E.
What needs a common clock is the window (first send to last end over all hosts, the
throughput denominator) and any timeline. Each host's offset from the driver is estimated the
way Cristian did: the driver reads its clock (t0), asks the host for its clock (r), reads its
own again (t1); then offset = r − (t0 + t1) / 2, and the true offset lies within ±RTT/2 of
that (r was read somewhere between t0 and t1). Of several exchanges the one with the smallest
RTT is kept. A host's record times are moved onto the driver's clock by subtracting its offset.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from inferlab.picks import pick
from inferlab.records import RequestRecord

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "ClockOffset",
    "ClockSample",
    "estimate_offset",
    "measure_offset",
    "on_driver_clock",
    "window_error_ns",
]


@dataclass(frozen=True)
class ClockSample:
    """One exchange: driver clock before (``t0_ns``) and after (``t1_ns``), host's reading."""

    t0_ns: int
    remote_ns: int
    t1_ns: int

    @property
    def rtt_ns(self) -> int:
        return self.t1_ns - self.t0_ns


@dataclass(frozen=True)
class ClockOffset:
    """A host's clock minus the driver's (ns), from the minimum-RTT exchange of ``samples``;
    the true offset is within ``bound_ns`` (RTT/2) of ``offset_ns``."""

    offset_ns: int
    rtt_ns: int
    samples: int

    @property
    def bound_ns(self) -> int:
        return (self.rtt_ns + 1) // 2

    def to_json(self) -> dict[str, JsonValue]:
        return pick(self, "offset_ns", "rtt_ns", "bound_ns", "samples")


def estimate_offset(samples: Sequence[ClockSample]) -> ClockOffset:
    """Cristian's estimate from the exchange with the smallest round trip."""
    if not samples:
        raise ValueError("no clock exchange to estimate an offset from")
    best = min(samples, key=lambda s: s.rtt_ns)
    offset = best.remote_ns - (best.t0_ns + best.t1_ns) // 2
    return ClockOffset(offset, best.rtt_ns, len(samples))


def measure_offset(
    read_remote: Callable[[], int],
    rounds: int = 8,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> ClockOffset:
    """``rounds`` exchanges with a host whose clock ``read_remote()`` returns (a blocking
    call), timed on ``clock``; the estimate of :func:`estimate_offset`."""
    samples = []
    for _ in range(max(1, rounds)):
        t0 = clock()
        remote = int(read_remote())
        samples.append(ClockSample(t0, remote, clock()))
    return estimate_offset(samples)


def on_driver_clock(rec: RequestRecord, offset_ns: int, client: str) -> RequestRecord:
    """``rec`` (times on a host whose clock reads ``offset_ns`` ahead of the driver's) with
    every time on the driver's clock, tagged with the ``client`` host; durations unchanged."""
    return replace(
        rec,
        send_ns=rec.send_ns - offset_ns if rec.send_ns else 0,
        end_ns=rec.end_ns - offset_ns if rec.end_ns else 0,
        scheduled_ns=None if rec.scheduled_ns is None else rec.scheduled_ns - offset_ns,
        event_ns=[t - offset_ns for t in rec.event_ns],
        client=client,
    )


def window_error_ns(records: Sequence[RequestRecord], bounds: dict[str, int]) -> int:
    """Bound on the error of the merged window (first send to last end, ns): the offset
    bounds of the hosts that made the first send and the last end (0 when one host made
    both, whose own clock measured the window)."""
    sends = [r for r in records if r.send_ns and not r.warmup]
    ends = [r for r in records if r.end_ns and not r.warmup]
    if not sends or not ends:
        return 0
    first = min(sends, key=lambda r: r.send_ns).client or ""
    last = max(ends, key=lambda r: r.end_ns).client or ""
    if first == last:
        return 0
    return bounds.get(first, 0) + bounds.get(last, 0)
