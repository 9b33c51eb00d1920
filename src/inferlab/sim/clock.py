"""The reference engine's model clock: request records re-timed from its ground truth.

The engine knows when each request arrived (``recv_ns``) and when each of its token chunks was
due (``chunks``: due, written, tokens), on ``perf_counter_ns`` of the same host as the
client's own timestamps. ``on_model_clock`` puts a client's records on that clock: sent at
arrival, each token-bearing event at its chunk's due time, ended at the last one. What the
client, the kernel and a loaded machine add (late writes, late reads) is gone (token counts
and everything else the client read are kept), so what is
derived from the records is the timing model's own: a verdict or a trust flag read from them
does not depend on the wall clock of the machine that ran them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.records import RequestRecord

__all__ = ["Retimed", "on_model_clock"]


@dataclass(frozen=True)
class Retimed:
    """How many records were put on the model clock, and how many kept their own timing
    (no ground truth for their request id, or a different number of token chunks)."""

    retimed: int
    kept: int


def _token_chunks(truth: Mapping[str, Any]) -> list[int]:
    """Due times (ns) of the chunks of one truth record that carried output tokens."""
    return [int(c[0]) for c in truth.get("chunks") or () if int(c[2]) > 0]


def on_model_clock(records: Sequence[RequestRecord], truth: Iterable[Mapping[str, Any]]) -> Retimed:
    """Re-time ``records`` in place from the engine's ground truth (``GET /truth`` records,
    matched on the request id the client sent). A failed request, or one whose token events
    do not match the engine's chunks one to one, keeps the client's timing."""
    by_id = {str(t["request_id"]): t for t in truth if t.get("request_id")}
    retimed = 0
    for rec in records:
        t = by_id.get(rec.request_id)
        chunks = _token_chunks(t) if t is not None else []
        if t is None or not rec.ok or len(chunks) != len(rec.event_ns):
            continue
        rec.send_ns = int(t["recv_ns"])
        rec.event_ns = chunks
        rec.end_ns = rec.event_ns[-1] if rec.event_ns else rec.send_ns
        retimed += 1
    return Retimed(retimed, len(records) - retimed)
