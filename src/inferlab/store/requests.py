"""One stored request as a row: send/end times, every token event as packed offsets, the client,
for an adaptive point whether it was dropped from the statistics (ramp-up, drain), and for a
sessions point its conversation and turn.

``event_offsets`` holds int64 little-endian ``event_ns - send_ns``; ``event_tokens`` the int32
token count of each event. Unpacking restores the absolute perf-counter times."""

from __future__ import annotations

import json
from array import array
from typing import Any

from inferlab.records import ErrorKind, RequestRecord

__all__ = ["INSERT_REQUEST", "SELECT_REQUESTS", "pack_request", "unpack_request"]

INSERT_REQUEST = (
    "INSERT INTO requests(run_id, idx, request_id, warmup, scheduled_ns, send_ns, end_ns, "
    "status, error_kind, error_message, input_tokens, requested_output_tokens, "
    "usage_prompt_tokens, usage_completion_tokens, counted_output_tokens, finish_reason, "
    "worker, event_offsets, event_tokens, warnings_json, client, dropped, session, turn) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
SELECT_REQUESTS = (
    "SELECT idx, request_id, warmup, scheduled_ns, send_ns, end_ns, status, error_kind, "
    "error_message, input_tokens, requested_output_tokens, usage_prompt_tokens, "
    "usage_completion_tokens, counted_output_tokens, finish_reason, worker, "
    "event_offsets, event_tokens, warnings_json, client, dropped, session, turn "
    "FROM requests WHERE run_id=? "
    "ORDER BY idx"
)


def pack_request(run_id: int, i: int, r: RequestRecord) -> tuple[Any, ...]:
    """The ``INSERT_REQUEST`` parameters of request ``i`` of run ``run_id``."""
    send = r.send_ns
    return (
        run_id,
        i,
        r.request_id,
        int(r.warmup),
        r.scheduled_ns,
        send,
        r.end_ns,
        r.status,
        r.error_kind.value if r.error_kind else None,
        r.error_message,
        r.input_tokens,
        r.requested_output_tokens,
        r.usage_prompt_tokens,
        r.usage_completion_tokens,
        r.counted_output_tokens,
        r.finish_reason,
        r.worker,
        array("q", [t - send for t in r.event_ns]).tobytes(),
        array("i", r.event_tokens).tobytes(),
        json.dumps(r.warnings, sort_keys=True, separators=(",", ":"), default=str),
        r.client,
        r.dropped,
        r.session,
        r.turn,
    )


def unpack_request(r: tuple[Any, ...]) -> RequestRecord:
    """A ``SELECT_REQUESTS`` row back as the record it was."""
    offs = array("q")
    offs.frombytes(r[16])
    toks = array("i")
    toks.frombytes(r[17])
    send = int(r[4])
    return RequestRecord(
        index=r[0],
        request_id=r[1] or "",
        warmup=bool(r[2]),
        scheduled_ns=r[3],
        send_ns=send,
        end_ns=r[5],
        status=r[6],
        error_kind=ErrorKind(r[7]) if r[7] else None,
        error_message=r[8],
        event_ns=[send + o for o in offs],
        event_tokens=list(toks),
        input_tokens=r[9],
        requested_output_tokens=r[10],
        usage_prompt_tokens=r[11],
        usage_completion_tokens=r[12],
        counted_output_tokens=r[13],
        finish_reason=r[14],
        worker=r[15],
        warnings=json.loads(r[18]),
        client=r[19],
        dropped=r[20],
        session=r[21],
        turn=r[22],
    )
