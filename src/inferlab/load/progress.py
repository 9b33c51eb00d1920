"""Light per-request summaries that workers stream to the parent during an adaptive point.

Parsing a response fully (SSE framing, JSON per event) costs milliseconds per request, too much
to do on the timing path while other requests are in flight; the full parse still happens after
the load point. For the stopping rule the parent needs only when the first and last
token-bearing events arrived and how many tokens a request carried, which a few byte searches
over the first and last body pieces give (~10 µs). The stored statistics are computed from the
full records at the end; these summaries only decide *when* to stop.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferlab.load.http import Exchange

__all__ = ["LightRecord", "Progress", "light_record"]

_TOKEN = re.compile(rb'"(?:text|content|reasoning_content|reasoning)":\s*"(?!")')
_USAGE = re.compile(rb'"completion_tokens":\s*(\d+)')


@dataclass(frozen=True, slots=True)
class LightRecord:
    """One finished request as the stopping rule sees it (times: perf_counter_ns)."""

    index: int
    send_ns: int
    end_ns: int
    ok: bool
    first_ns: int  # arrival of the first piece carrying output text (0: none)
    last_ns: int  # arrival of the last one
    tokens: int  # usage.completion_tokens, else the requested length
    ramp: bool = False  # the first request of its user (left out of the statistics)

    @property
    def tpot_ms(self) -> float | None:
        """(last − first) / (tokens − 1), ms; None below 2 tokens or without text."""
        if not self.ok or self.first_ns == 0 or self.tokens < 2:
            return None
        return (self.last_ns - self.first_ns) / 1e6 / (self.tokens - 1)


def light_record(
    index: int, ex: Exchange, requested_tokens: int, ramp: bool = False
) -> LightRecord:
    """Summarize one exchange from a few searches over its first and last pieces."""
    ok = ex.error_kind is None and 200 <= ex.status < 300
    first = last = 0
    if ok:
        for t, data in ex.pieces:
            if _TOKEN.search(data):
                first = t
                break
        for t, data in reversed(ex.pieces):
            if _TOKEN.search(data):
                last = t
                break
    tokens = requested_tokens
    if ok and ex.pieces:
        tail = b"".join(p for _, p in ex.pieces[-3:])
        m = _USAGE.search(tail)
        if m:
            tokens = int(m.group(1))
    ok = ok and first > 0
    return LightRecord(index, ex.send_ns, ex.end_ns, ok, first, last, tokens, ramp)


class Progress:
    """A worker's side: light summaries of finished requests, the sends still in flight, and
    each user's first request (the ramp-up), reported to the parent every few lag probes."""

    def __init__(self, report: Callable[[Any], None] | None) -> None:
        self.report = report
        self.light: list[Any] = []
        self.inflight: dict[int, int] = {}  # request index → perf_counter_ns when issued
        self.ramp: set[int] = set()

    def issued(self, index: int, first: bool) -> None:
        self.inflight[index] = time.perf_counter_ns()
        if first:
            self.ramp.add(index)

    def finished(self, index: int, ex: Exchange, output_tokens: int, first: bool) -> None:
        del self.inflight[index]
        self.light.append(light_record(index, ex, output_tokens, first))

    def flush(self) -> None:
        if self.report is not None and self.light:
            self.report((list(self.light), min(self.inflight.values(), default=None)))
            self.light.clear()
