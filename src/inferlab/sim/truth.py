"""Ground truth of the reference engine: one record per generation request, and summaries."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from inferlab.picks import pick

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["Record", "Request", "lateness_summary"]

_EMPTY = array("q")


@dataclass(slots=True, eq=False)
class Request:
    """One parsed HTTP request: received and parsed at ``recv_ns``/``parsed_ns`` (ns)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool
    recv_ns: int
    parsed_ns: int


class Record:
    """Ground truth of one generation request."""

    __slots__ = (
        "completion_tokens",
        "done_ns",
        "dues",
        "endpoint",
        "fault",
        "id",
        "ntokens",
        "parsed_ns",
        "prompt_tokens",
        "recv_ns",
        "request_id",
        "status",
        "stream",
        "writes",
    )

    def __init__(self, rid: str, endpoint: str, req: Request) -> None:
        self.id = rid
        self.request_id = req.headers.get("x-request-id")
        self.endpoint = endpoint
        self.stream = False
        self.recv_ns = req.recv_ns
        self.parsed_ns = req.parsed_ns
        self.prompt_tokens: int | None = None
        self.completion_tokens = 0
        # arrays, not lists: the cyclic GC does not track them (see serve())
        self.dues = _EMPTY
        self.writes = array("q")
        self.ntokens = _EMPTY
        self.done_ns = 0
        self.status = 200
        self.fault: str | None = None

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            **pick(self, "id", "request_id", "endpoint", "stream", "recv_ns", "parsed_ns"),
            **pick(self, "prompt_tokens", "completion_tokens"),
            "chunks": [list(c) for c in zip(self.dues, self.writes, self.ntokens, strict=False)],
            **pick(self, "done_ns", "status", "fault"),
        }


def lateness_summary(recs: Sequence[Record]) -> dict[str, JsonValue]:
    """How late chunks were written (``write_ns - due_ns``), in ms, and the faults injected."""
    dues = [d for r in recs for d in r.dues[: len(r.writes)]]
    writes = [w for r in recs for w in r.writes]
    late = (np.asarray(writes, dtype=np.int64) - np.asarray(dues, dtype=np.int64)) / 1e6
    if late.size:
        stats = {
            "mean": float(late.mean()),
            "p50": float(np.percentile(late, 50)),
            "p99": float(np.percentile(late, 99)),
            "max": float(late.max()),
        }
    else:
        stats = {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    return {
        "simulated": True,
        "requests": len(recs),
        "chunks": int(late.size),
        "lateness_ms": dict(stats),
        "chunks_late_over_1ms": int((late > 1.0).sum()),
        "faults": dict(Counter(r.fault for r in recs if r.fault is not None)),
    }
