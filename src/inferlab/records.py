"""Raw samples: each request as measured (``RequestRecord``) and a logprob reference's fields.

Every load statistic is derived from the request records; the agreement gate compares against
a logprob reference (``LogprobFields``: its field list, once for the gate and the store).

All times are ``time.perf_counter_ns()`` of the measuring process (CLOCK_MONOTONIC on Linux,
so comparable with the reference engine's ground truth on the same host). Load from several
hosts is merged on the driver's clock (each host's offset estimated and subtracted; see
``inferlab.cluster.clock``), and each record names its ``client`` host.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from pydantic import JsonValue


__all__ = ["ErrorKind", "LogprobFields", "RequestRecord"]


class ErrorKind(str, Enum):
    """Why a request failed. Failed requests never enter latency statistics."""

    CONNECT = "connect"  # TCP/TLS connect refused, reset or timed out
    HTTP = "http"  # non-2xx status; ``error_message`` carries the server's own message
    TIMEOUT = "timeout"  # total request deadline passed
    STALL = "stall"  # no byte for ``stall_timeout`` seconds mid-response
    TRUNCATED = "truncated"  # connection closed before the response ended
    MALFORMED = "malformed"  # an SSE event or the HTTP framing could not be parsed
    OVERSIZED = "oversized"  # one SSE event outgrew the client's cap (memory stays bounded)
    CANCELLED = "cancelled"  # the run was interrupted (Ctrl-C) while it was in flight


@dataclass(slots=True)
class RequestRecord:
    """One request as measured.

    ``event_ns[i]`` is the arrival time of the i-th token-bearing SSE event (an event whose
    delta carries at least one output token); ``event_tokens[i]`` how many tokens it carried.
    """

    index: int
    request_id: str
    warmup: bool = False
    scheduled_ns: int | None = None  # open loop: when it was due to be sent
    send_ns: int = 0  # first byte of the request written
    end_ns: int = 0  # last byte of the response read (or the failure)
    status: int = 0
    error_kind: ErrorKind | None = None
    error_message: str | None = None
    event_ns: list[int] = field(default_factory=list)
    event_tokens: list[int] = field(default_factory=list)
    input_tokens: int | None = None  # prompt length as generated/checked by the client
    requested_output_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    usage_completion_tokens: int | None = None
    counted_output_tokens: int | None = None  # tokenizer count of the output text
    finish_reason: str | None = None
    worker: int = 0
    warnings: list[str] = field(default_factory=list)
    #: stored but left out of the statistics: "ramp-up" (the first C requests of an adaptive
    #: point) or "drain" (in flight when it stopped); None for a counted request
    dropped: str | None = None
    client: str | None = None  # the client host that measured it (several-host load)
    #: a sessions point: which user's conversation, and which turn of it (0-based)
    session: int | None = None
    turn: int | None = None

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @property
    def counted(self) -> bool:
        """Part of the point's statistics: neither warmup nor dropped."""
        return not self.warmup and self.dropped is None

    @property
    def output_tokens(self) -> int:
        """Server-reported completion tokens when given, else the client's count."""
        if self.usage_completion_tokens is not None:
            return self.usage_completion_tokens
        if self.counted_output_tokens is not None:
            return self.counted_output_tokens
        return sum(self.event_tokens)

    @property
    def ttft_ns(self) -> int | None:
        """send → first token-bearing event."""
        return self.event_ns[0] - self.send_ns if self.event_ns else None

    @property
    def e2e_ns(self) -> int | None:
        """send → last token-bearing event."""
        return self.event_ns[-1] - self.send_ns if self.event_ns else None

    @property
    def client_queue_delay_ns(self) -> int | None:
        """send − scheduled (open loop only)."""
        return None if self.scheduled_ns is None else self.send_ns - self.scheduled_ns

    def to_json(self) -> dict[str, JsonValue]:
        d = asdict(self)
        d["error_kind"] = self.error_kind.value if self.error_kind else None
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RequestRecord:
        d = dict(d)
        kind = d.get("error_kind")
        d["error_kind"] = ErrorKind(kind) if kind else None
        return cls(**d)


class LogprobFields(BaseModel):
    """A logprob reference's fields, once for the gate that makes it
    (``verify.logprobs.LogprobReference``) and the store that keeps it
    (``store.checks.LogprobReferenceRecord``): prompts, greedy continuations and each
    continuation position's top-``top_k`` map (token text → logprob, nats) of ``tokens``-token
    continuations of ``seed``'s prompts; ``token_texts`` / ``token_ids``: each continuation
    split into its generated tokens' texts / ids (None: not named by the engine, or a
    reference stored before they were kept)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompts: list[str]
    continuations: list[str]
    positions: list[list[dict[str, float]]]
    top_k: int
    tokens: int
    seed: int
    token_texts: list[list[str] | None] | None = None
    token_ids: list[list[int] | None] | None = None
