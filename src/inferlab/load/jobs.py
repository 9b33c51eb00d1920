"""What a measuring process is given and what it gives back, across the process boundary:
the prepared requests (``Item``), a worker's share of one phase (``WorkerJob``: its requests,
its users or arrival offsets, or its conversations) and its ``WorkerResult``."""

from __future__ import annotations

from dataclasses import dataclass, field

from inferlab.load.http import Endpoint
from inferlab.load.sessions import ChatTarget, SessionScript
from inferlab.records import RequestRecord

__all__ = ["Item", "WorkerJob", "WorkerResult"]


@dataclass(slots=True, frozen=True)
class Item:
    """A prepared request: global index, id sent as ``X-Request-Id``, exact bytes to write."""

    index: int
    request_id: str
    data: bytes
    input_tokens: int | None
    output_tokens: int


@dataclass(slots=True)
class WorkerJob:
    worker: int
    endpoint: Endpoint
    items: list[Item]
    warmup: bool = False
    concurrency: int | None = None  # closed loop: users in this worker
    offsets_s: list[float] | None = None  # open loop: send offsets, parallel to items
    max_concurrency: int | None = None  # open loop cap in this worker
    duration_s: float | None = None  # closed loop: stop issuing after this
    cycle: bool = False  # closed loop with duration: reuse items round-robin
    timeout_s: float = 600.0
    stall_timeout_s: float = 60.0
    headers: dict[str, str] = field(default_factory=dict)
    progress: bool = False  # adaptive point: stream light summaries to the parent
    cpus: tuple[int, ...] | None = None  # pin the worker to these CPUs
    not_before_ns: int | None = None  # start no earlier (perf_counter_ns): hosts start together
    sessions: list[SessionScript] | None = None  # a sessions point: this worker's users
    target: ChatTarget | None = None  # where the sessions' turns go


@dataclass(slots=True)
class WorkerResult:
    worker: int
    records: list[RequestRecord]
    texts: list[list[str]]
    loop_lag_ns: list[int]
    start_ns: int
    stop_ns: int
    interrupted: bool = False
    rejected: str | None = None  # the server's message when it refused the first requests
    failure: str | None = None  # the worker itself broke (a bug): the traceback
