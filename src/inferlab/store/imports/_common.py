"""Shared pieces of the importers: the result type, the format registry entry, strict readers
of JSON / JSONL content, and the conversions every format needs (per-request events from a
tool's TTFT + gaps, token spreading, numpy population std → sample std).

Every problem with the input is a ``ConfigError`` naming the file (and line for JSONL) and
what was expected; nothing here returns a partial result.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from inferlab.errors import ConfigError
from inferlab.records import ErrorKind, RequestRecord

__all__ = [
    "Content",
    "Format",
    "ImportedRun",
    "Source",
    "classify_error",
    "events_from_gaps",
    "load_content",
    "load_label",
    "sample_std",
    "spread_tokens",
]

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
class Content:
    """A file read as JSON (one document, ``line`` None) or JSONL (one object per line)."""

    path: Path
    docs: list[tuple[int | None, Any]]  # (1-based line for JSONL, parsed value)
    jsonl: bool


@dataclass(frozen=True)
class Format:
    """One importable file format: ``sniff`` recognizes content, ``parse`` converts it."""

    name: str
    tool: str
    expects: str  # what a file of this format looks like, in words (for error messages)
    sniff: Callable[[Content], bool]
    parse: Callable[[Content], list[ImportedRun]]


def load_content(path: Path) -> Content:
    """Read ``path`` as one JSON document, else as JSONL; ConfigError when it is neither."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a benchmark result file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e.strerror})") from None
    if not text.strip():
        raise ConfigError(f"{path}: empty file, expected a JSON or JSONL benchmark result")
    try:
        doc = json.loads(text)
        one_line = text.strip().count("\n") == 0
        return Content(path, [(1 if one_line else None, doc)], jsonl=False)
    except json.JSONDecodeError as whole:
        lines = [(i, s) for i, s in enumerate(text.splitlines(), 1) if s.strip()]
        if len(lines) < 2:
            raise ConfigError(
                f"{path}: not valid JSON ({whole.msg} at line {whole.lineno} column {whole.colno})"
            ) from None
        docs: list[tuple[int | None, Any]] = []
        for no, s in lines:
            try:
                docs.append((no, json.loads(s)))
            except json.JSONDecodeError as e:
                if not docs:
                    # not JSONL either: report the whole-document error
                    raise ConfigError(
                        f"{path}: not valid JSON ({whole.msg} at line {whole.lineno} "
                        f"column {whole.colno}) nor JSON Lines (line {no}: {e.msg})"
                    ) from None
                raise ConfigError(
                    f"{path}:{no}: not a valid JSON line ({e.msg} at column {e.colno}); "
                    "the file is damaged or truncated"
                ) from None
        return Content(path, docs, jsonl=True)


def where(c: Content, line: int | None) -> str:
    return f"{c.path}:{line}" if line is not None else str(c.path)


T = TypeVar("T")


class Source:
    """Typed, strict access to one JSON object of a file: every error names file (and line)."""

    def __init__(self, content: Content, line: int | None, obj: Any, what: str) -> None:
        self.content = content
        self.line = line
        self.where = where(content, line)
        if not isinstance(obj, dict):
            raise ConfigError(f"{self.where}: expected a JSON object ({what}), got {_kind(obj)}")
        self.obj: dict[str, Any] = obj

    def fail(self, reason: str) -> ConfigError:
        return ConfigError(f"{self.where}: {reason}")

    def _get(self, key: str, required: bool) -> Any:
        if key not in self.obj:
            if required:
                raise self.fail(f"missing required field {key!r}")
            return None
        return self.obj[key]

    def num(self, key: str, *, required: bool = False, null: bool = True) -> float | None:
        v = self._get(key, required)
        if v is None:
            if key in self.obj and not null:
                raise self.fail(f"field {key!r} is null, expected a number")
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(f"field {key!r} must be a number, got {_kind(v)}")
        return float(v)

    def req_num(self, key: str) -> float:
        v = self.num(key, required=True, null=False)
        assert v is not None
        return v

    def int_(self, key: str, *, required: bool = False) -> int | None:
        v = self._get(key, required)
        if v is None:
            if required:
                raise self.fail(f"field {key!r} is null, expected an integer")
            return None
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if not isinstance(v, float) or not v.is_integer():
            raise self.fail(f"field {key!r} must be an integer, got {_kind(v)} {v!r}")
        return int(v)

    def req_int(self, key: str) -> int:
        v = self.int_(key, required=True)
        assert v is not None
        return v

    def str_(self, key: str, *, required: bool = False) -> str | None:
        v = self._get(key, required)
        if v is None:
            if required:
                raise self.fail(f"field {key!r} is null, expected a string")
            return None
        if not isinstance(v, str):
            raise self.fail(f"field {key!r} must be a string, got {_kind(v)}")
        return v

    def obj_(self, key: str, *, required: bool = False) -> Source | None:
        v = self._get(key, required)
        if v is None:
            if required:
                raise self.fail(f"field {key!r} is null, expected an object")
            return None
        return self.sub(v, key)

    def req_obj(self, key: str) -> Source:
        v = self.obj_(key, required=True)
        assert v is not None
        return v

    def sub(self, v: Any, what: str) -> Source:
        s = Source.__new__(Source)
        s.content, s.line = self.content, self.line
        s.where = f"{self.where} ({what})"
        if not isinstance(v, dict):
            raise ConfigError(f"{s.where}: expected a JSON object, got {_kind(v)}")
        s.obj = v
        return s

    def list_(self, key: str, *, required: bool = False) -> list[Any] | None:
        v = self._get(key, required)
        if v is None:
            if required:
                raise self.fail(f"field {key!r} is null, expected a list")
            return None
        if not isinstance(v, list):
            raise self.fail(f"field {key!r} must be a list, got {_kind(v)}")
        return v

    def num_list(self, key: str, n: int | None = None) -> list[float] | None:
        """A list of numbers (None entries refused); ``n``: required length."""
        v = self.list_(key)
        if v is None:
            return None
        out = [self._elem_num(key, i, x) for i, x in enumerate(v)]
        if n is not None and len(out) != n:
            raise self.fail(f"field {key!r} has {len(out)} entries, expected {n}")
        return out

    def int_list(self, key: str, n: int | None = None) -> list[int] | None:
        v = self.num_list(key, n)
        if v is None:
            return None
        for i, x in enumerate(v):
            if x != int(x):
                raise self.fail(f"{key}[{i}] must be an integer, got {x!r}")
        return [int(x) for x in v]

    def str_list(self, key: str, n: int | None = None) -> list[str] | None:
        v = self.list_(key)
        if v is None:
            return None
        for i, x in enumerate(v):
            if x is not None and not isinstance(x, str):
                raise self.fail(f"{key}[{i}] must be a string, got {_kind(x)}")
        if n is not None and len(v) != n:
            raise self.fail(f"field {key!r} has {len(v)} entries, expected {n}")
        return ["" if x is None else x for x in v]

    def nested_num_list(self, key: str, n: int | None = None) -> list[list[float]] | None:
        v = self.list_(key)
        if v is None:
            return None
        out: list[list[float]] = []
        for i, row in enumerate(v):
            if not isinstance(row, list):
                raise self.fail(f"{key}[{i}] must be a list, got {_kind(row)}")
            out.append([self._elem_num(f"{key}[{i}]", j, x) for j, x in enumerate(row)])
        if n is not None and len(out) != n:
            raise self.fail(f"field {key!r} has {len(out)} entries, expected {n}")
        return out

    def _elem_num(self, key: str, i: int, x: Any) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise self.fail(f"{key}[{i}] must be a number, got {_kind(x)}")
        if not math.isfinite(x):
            raise self.fail(f"{key}[{i}] is not finite ({x!r})")
        return float(x)


def _kind(v: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(v), type(v).__name__)


def load_label(concurrency: int | None, rate: float | None) -> str:
    """Load point label: "C=12", "rate=4/s", "C=12,rate=4/s" or "rate=inf"."""
    parts = []
    if concurrency is not None:
        parts.append(f"C={concurrency}")
    if rate is not None:
        parts.append(f"rate={rate:g}/s")
    return ",".join(parts) if parts else "rate=inf"


@dataclass
class Details:
    """The per-request arrays that sglang.bench_serving (``--output-details``) and vLLM
    (``--save-detailed``) share: TTFTs (s), chunk gaps (s), lengths, error texts."""

    ttfts: list[float]
    itls: list[list[float]]
    out_lens: list[int]
    in_lens: list[int] | None
    errors: list[str] | None

    @property
    def n(self) -> int:
        return len(self.ttfts)


def read_details(s: Source) -> Details:
    """Read and cross-check the per-request arrays (same length; output lengths summing to
    ``total_output_tokens``, else the details belong to another run)."""
    ttfts = s.num_list("ttfts") or []
    n = len(ttfts)
    d = Details(
        ttfts=ttfts,
        itls=s.nested_num_list("itls", n) or [],
        out_lens=s.int_list("output_lens", n) or [],
        in_lens=s.int_list("input_lens", n) if "input_lens" in s.obj else None,
        errors=s.str_list("errors", n) if "errors" in s.obj else None,
    )
    total_out = s.req_int("total_output_tokens")
    if sum(d.out_lens) != total_out:
        raise s.fail(
            f"sum(output_lens) = {sum(d.out_lens)} but total_output_tokens = {total_out}: "
            "the per-request details do not belong to this run"
        )
    return d


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
