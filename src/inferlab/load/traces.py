"""Request traces to replay: one parser per format (``TRACE_FORMATS``), and slices of a trace.

A trace is a list of ``TraceRequest``: when it arrives (s from the trace's first request), its
input and output lengths (tokens), and, for formats that have them (Mooncake), the hash ids of
its 512-token prompt blocks (``BLOCK_TOKENS``): two requests with the same id in a block share
that block's tokens. Every line is checked before anything is sent: a malformed one is a
``ConfigError`` naming ``file:line`` and what was expected.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "BLOCK_TOKENS",
    "TRACE_FORMATS",
    "TraceRequest",
    "read_trace",
    "slice_trace",
]

#: tokens per hash block of the Mooncake format
BLOCK_TOKENS = 512


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: ``arrival_s`` from the trace's first, lengths in tokens,
    ``hash_ids`` of its 512-token blocks (None: the format has none), ``line`` in its file."""

    arrival_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] | None = None
    line: int = 0


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers; ConfigError when the file cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the trace: {exc}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield n, line


def _object(where: str, line: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise ConfigError(
            f"{where}: invalid JSON ({exc.args[0]}); expected one object a line"
        ) from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _count(where: str, obj: dict[str, Any], key: str, *, least: int = 1) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        got = "missing" if key not in obj else repr(v)
        raise ConfigError(f"{where}: field {key!r}: expected an integer ≥ {least}, got {got}")
    return v


def _time(where: str, value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        got = "missing" if value is None else repr(value)
        raise ConfigError(f"{where}: field {key!r}: expected a number ≥ 0, got {got}")
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: field {key!r}: expected a number ≥ 0, got {value!r}")
    return float(value)


def _mooncake(path: Path) -> list[TraceRequest]:
    """Mooncake JSONL: ``{"timestamp": ms, "input_length": N, "output_length": M,
    "hash_ids": [...]}`` a line, with ceil(N / 512) hash ids."""
    out = []
    for n, line in _lines(path):
        where = f"{path}:{n}"
        obj = _object(where, line)
        t = _time(where, obj.get("timestamp"), "timestamp") / 1000.0
        inp = _count(where, obj, "input_length")
        outp = _count(where, obj, "output_length")
        ids = obj.get("hash_ids")
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            raise ConfigError(f"{where}: field 'hash_ids': expected a list of integers")
        blocks = math.ceil(inp / BLOCK_TOKENS)
        if len(ids) != blocks:
            raise ConfigError(
                f"{where}: field 'hash_ids': expected {blocks} ids (one per {BLOCK_TOKENS}-token "
                f"block of input_length {inp}), got {len(ids)}"
            )
        out.append(TraceRequest(t, inp, outp, tuple(ids), n))
    return out


#: the CSV format's columns (a header names them, in any order; other columns are ignored)
CSV_COLUMNS = ("arrival_s", "input_tokens", "output_tokens")


def _csv(path: Path) -> list[TraceRequest]:
    """CSV with a header ``arrival_s,input_tokens,output_tokens`` (seconds, tokens)."""
    rows = list(_lines(path))
    if not rows:
        raise ConfigError(f"{path}: empty trace; expected a header {','.join(CSV_COLUMNS)}")
    head_n, head = rows[0]
    names = [c.strip() for c in next(csv.reader([head]))]
    missing = [c for c in CSV_COLUMNS if c not in names]
    if missing:
        raise ConfigError(
            f"{path}:{head_n}: header: expected columns {', '.join(CSV_COLUMNS)}; "
            f"missing {', '.join(missing)} (got {', '.join(names)})"
        )
    col = {c: names.index(c) for c in CSV_COLUMNS}
    out = []
    for n, line in rows[1:]:
        where = f"{path}:{n}"
        cells = next(csv.reader([line]))
        if len(cells) != len(names):
            raise ConfigError(f"{where}: expected {len(names)} columns, got {len(cells)}")
        obj: dict[str, JsonValue] = {}
        for c in CSV_COLUMNS:
            text = cells[col[c]].strip()
            try:
                obj[c] = float(text) if c == "arrival_s" else int(text)
            except ValueError:
                what = "a number" if c == "arrival_s" else "an integer"
                raise ConfigError(f"{where}: column {c!r}: expected {what}, got {text!r}") from None
        t = _time(where, obj["arrival_s"], "arrival_s")
        out.append(
            TraceRequest(
                t, _count(where, obj, "input_tokens"), _count(where, obj, "output_tokens"), None, n
            )
        )
    return out


def _inferlab(path: Path) -> list[TraceRequest]:
    """``inferlab export --what requests --format jsonl`` of one run: each measured request at
    its scheduled (else send) time, with its input and output lengths; warmup requests and
    requests without an output length (failed) are left out."""
    out = []
    run: tuple[Any, Any] | None = None
    for n, line in _lines(path):
        where = f"{path}:{n}"
        obj = _object(where, line)
        if "send_ns" not in obj or "run_id" not in obj:
            raise ConfigError(
                f"{where}: expected a request row of `inferlab export --what requests "
                "--format jsonl` (fields run_id, send_ns, input_tokens, output_tokens)"
            )
        this = (obj.get("run_id"), obj.get("trial"))
        if run is None:
            run = this
        elif this != run:
            raise ConfigError(
                f"{where}: a second run (run {this[0]} trial {this[1]} after run {run[0]} "
                f"trial {run[1]}); expected one run: export it with `inferlab export --run ID`"
            )
        if obj.get("warmup"):
            continue
        outp = obj.get("usage_completion_tokens") or obj.get("output_tokens")
        if outp is None:
            continue  # failed: no length to ask for again
        ns = obj.get("scheduled_ns") if obj.get("scheduled_ns") is not None else obj["send_ns"]
        t = _time(where, ns, "send_ns") / 1e9
        row = {"input_tokens": obj.get("input_tokens"), "output_tokens": outp}
        out.append(
            TraceRequest(
                t, _count(where, row, "input_tokens"), _count(where, row, "output_tokens"), None, n
            )
        )
    return out


#: format name → parser of a whole file (a list in file order; ``read_trace`` sorts it)
TRACE_FORMATS: dict[str, Callable[[Path], list[TraceRequest]]] = {
    "mooncake": _mooncake,
    "csv": _csv,
    "inferlab": _inferlab,
}


def read_trace(path: Path, fmt: str) -> list[TraceRequest]:
    """Every request of the trace at ``path`` in format ``fmt``, by arrival, times from the
    first (s); ConfigError for an unknown format, an unreadable file or any malformed line."""
    parser = TRACE_FORMATS.get(fmt)
    if parser is None:
        raise ConfigError(f"trace format {fmt!r}: unknown; expected {', '.join(TRACE_FORMATS)}")
    reqs = sorted(parser(path), key=lambda r: r.arrival_s)
    if not reqs:
        raise ConfigError(f"{path}: the trace has no requests")
    t0 = reqs[0].arrival_s
    return [
        TraceRequest(r.arrival_s - t0, r.input_tokens, r.output_tokens, r.hash_ids, r.line)
        for r in reqs
    ]


def slice_trace(
    reqs: list[TraceRequest],
    *,
    start_s: float = 0.0,
    end_s: float | None = None,
    limit: int | None = None,
    where: str = "trace",
) -> list[TraceRequest]:
    """The requests arriving in [``start_s``, ``end_s``) (s from the trace's first), at most
    ``limit`` of them, their times from the first kept; ConfigError when none is left."""
    kept = [r for r in reqs if r.arrival_s >= start_s and (end_s is None or r.arrival_s < end_s)]
    if limit is not None:
        kept = kept[:limit]
    if not kept:
        span = f"{reqs[-1].arrival_s:.3f} s" if reqs else "empty"
        raise ConfigError(
            f"{where}: no request in the window {start_s:g}:{'' if end_s is None else f'{end_s:g}'}"
            f" s (the trace spans 0:{span})"
        )
    t0 = kept[0].arrival_s
    return [
        TraceRequest(r.arrival_s - t0, r.input_tokens, r.output_tokens, r.hash_ids, r.line)
        for r in kept
    ]
