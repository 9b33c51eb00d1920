"""Rows of the store ↔ Python values: a listed run (``RunRow``) and a request record.

Token arrival times are stored as packed int64 offsets from the request's send time.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.records import ErrorKind, RequestRecord
from inferlab.stats.trust import assess

__all__ = ["RunRow", "request_from_row", "request_row", "run_row"]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class RunRow:
    """One stored load point (a run) with its config and environment, as listed."""

    id: int
    campaign: str
    config: str
    config_hash: str
    source: str
    definitions: str
    label: str
    concurrency: int | None
    rate: float | None
    trial: int
    model: str | None
    workload_hash: str
    started_at: str | None
    interrupted: bool
    summary: dict[str, Any]
    environment: dict[str, Any]
    metrics_version: int | None
    n_requests: int
    #: 'trusted' | 'untrusted' (runs stored before schema 3 are assessed when read)
    trust: str = "trusted"
    #: why it is untrusted: ``[{"reason", "message", "fix"}]``
    trust_reasons: tuple[dict[str, str], ...] = ()
    #: why the point stopped (adaptive/sequential points; None for a fixed count)
    stop: dict[str, Any] | None = None


def run_row(r: Sequence[Any]) -> RunRow:
    summary = json.loads(r[14])
    reasons = [dict(x) for x in json.loads(r[19] or "[]")]
    trust = r[18]
    if trust is None and r[4] == "inferlab bench":  # stored before schema 3: assess now
        lag = json.loads(r[21]) if r[21] else {}
        t = assess(
            lag_p99_ms=lag.get("p99"),
            tpot_median_ms=(summary.get("tpot_ms") or {}).get("p50"),
            interrupted=bool(r[13]),
        )
        trust, reasons = t.state, t.to_json()
    return RunRow(
        id=r[0],
        campaign=r[1],
        config=r[2],
        config_hash=r[3],
        source=r[4],
        definitions=r[5],
        label=r[6],
        concurrency=r[7],
        rate=r[8],
        trial=r[9],
        model=r[10],
        workload_hash=r[11],
        started_at=r[12],
        interrupted=bool(r[13]),
        summary=summary,
        environment=json.loads(r[15]) if r[15] else {},
        metrics_version=r[16],
        n_requests=r[17],
        trust=trust or "trusted",
        trust_reasons=tuple(reasons),
        stop=json.loads(r[20]) if r[20] else None,
    )


def request_row(run_id: int, i: int, r: RequestRecord) -> tuple[Any, ...]:
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
        _dumps(r.warnings),
        r.dropped,
    )


def request_from_row(r: Sequence[Any]) -> RequestRecord:
    """A request record from the columns ``Store.requests`` selects, in order."""
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
        dropped=r[19],
    )
