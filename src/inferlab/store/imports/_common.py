"""The importers' shared model and conversions: the result type, the format registry entry,
the per-request detail arrays of sglang/vLLM, and the conversions every format needs
(per-request events from a tool's TTFT + gaps, token spreading, numpy population std → sample
std, error texts → ErrorKind).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from inferlab.records import ErrorKind, RequestRecord
from inferlab.store.imports.content import Content

__all__ = [
    "Format",
    "ImportedRun",
    "classify_error",
    "events_from_gaps",
    "first",
    "load_label",
    "mmm",
    "sample_std",
    "spread_tokens",
    "stat_key",
    "token_workload",
]

T = TypeVar("T")

_NS = 1_000_000_000


@dataclass
class ImportedRun:
    """One load point of another tool's benchmark, in inferlab's data model."""

    tool: str  # "sglang.bench_serving" | "vllm bench serve" | "guidellm" | "aiperf"
    tool_version: str | None
    definitions: str  # which metric definitions the numbers came with, in words
    model: str | None
    label: str  # load point label: "C=12", "rate=4/s", "rate=inf"
    concurrency: int | None
    rate: float | None  # requests/s, None for unbounded
    started_at: str | None  # ISO 8601 if the file says
    duration_s: float | None
    records: list[RequestRecord]  # per-request data when the file has it (else [])
    summary: dict[str, float]  # the tool's aggregates mapped to inferlab names and units
    tool_summary: dict[str, Any]  # the tool's own aggregate fields, untouched
    notes: list[str] = field(default_factory=list)  # every mapping by formula applied
    workload: dict[str, Any] = field(default_factory=dict)  # input/output length info


@dataclass(frozen=True)
class Format:
    """One importable file format: ``sniff`` recognizes content, ``parse`` converts it."""

    name: str
    tool: str
    expects: str  # what a file of this format looks like, in words (for error messages)
    sniff: Callable[[Content], bool]
    parse: Callable[[Content], list[ImportedRun]]


def load_label(concurrency: int | None, rate: float | None) -> str:
    """Load point label: "C=12", "rate=4/s", "C=12,rate=4/s" or "rate=inf"."""
    parts = []
    if concurrency is not None:
        parts.append(f"C={concurrency}")
    if rate is not None:
        parts.append(f"rate={rate:g}/s")
    return ",".join(parts) if parts else "rate=inf"


def spread_tokens(n_events: int, n_tokens: int) -> list[int]:
    """Tokens per event summing to ``n_tokens``, at least 1 each: the first event carries 1
    (the prefill's token), the other n − 1 are spread evenly over the later events
    (base = (n − 1) // (events − 1); the remainder goes to evenly spaced events)."""
    if n_events <= 0:
        return []
    if n_events == 1:
        return [max(n_tokens, 1)]
    if n_tokens <= n_events:
        return [1] * n_events
    rest = n_events - 1
    base, rem = divmod(n_tokens - 1, rest)
    out = [base] * rest
    for j in range(rem):
        out[(2 * j + 1) * rest // (2 * rem)] += 1
    return [1, *out]


def events_from_gaps(send_ns: int, ttft_s: float, gaps_s: Sequence[float]) -> list[int]:
    """Absolute event times (ns): send + TTFT, then each cumulative gap (rounded once each,
    from the float sums, so rounding does not accumulate)."""
    out = [send_ns + round(ttft_s * _NS)]
    t = ttft_s
    for g in gaps_s:
        t += g
        out.append(send_ns + round(t * _NS))
    return out


def sample_std(pop_std: float, n: int) -> float | None:
    """numpy's population std (ddof=0) → sample std (ddof=1): × √(n / (n − 1))."""
    if n < 2:
        return None
    return pop_std * math.sqrt(n / (n - 1))


_ERROR_KINDS: list[tuple[re.Pattern[str], ErrorKind]] = [
    (re.compile(r"TimeoutError|ReadTimeout|timed out|Timeout", re.I), ErrorKind.TIMEOUT),
    (
        re.compile(r"ClientConnectorError|Cannot connect|Connection refused|ConnectError"),
        ErrorKind.CONNECT,
    ),
    (
        re.compile(
            r"ServerDisconnected|ClientPayloadError|RemoteProtocolError|IncompleteRead"
            r"|Connection reset|ContentLengthError|TransferEncodingError"
        ),
        ErrorKind.TRUNCATED,
    ),
    (re.compile(r"JSONDecodeError|Expecting value|Unterminated string"), ErrorKind.MALFORMED),
    (re.compile(r"CancelledError"), ErrorKind.CANCELLED),
]


def classify_error(text: str) -> ErrorKind:
    """The best ErrorKind a tool's error text supports; HTTP when it says nothing more."""
    for pat, kind in _ERROR_KINDS:
        if pat.search(text):
            return kind
    return ErrorKind.HTTP


def stat_key(metric: str, stat: str) -> list[str]:
    """inferlab summary names of one statistic: median and p50 are the same number."""
    if stat in ("median", "p50"):
        return [f"{metric}_median", f"{metric}_p50"]
    return [f"{metric}_{stat}"]


def mmm(xs: Sequence[float]) -> dict[str, float]:
    """mean / min / max of a non-empty list."""
    return {"mean": sum(xs) / len(xs), "min": float(min(xs)), "max": float(max(xs))}


def first(xs: Sequence[T]) -> T | None:
    return xs[0] if xs else None


def token_workload(records: Sequence[RequestRecord], workload: dict[str, Any]) -> None:
    """Add mean / min / max input and output tokens of the successful requests to
    ``workload`` (input only where the records know it)."""
    ok = [r for r in records if r.ok]
    ins = [r.input_tokens for r in ok if r.input_tokens is not None]
    if ins:
        workload["input_tokens"] = mmm(ins)
    if ok:
        workload["output_tokens"] = mmm([r.output_tokens for r in ok])
