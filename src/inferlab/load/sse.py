"""Server-sent events → token-bearing events, parsed after the response has ended.

An event is stamped with the arrival time of the read that completed it (the read holding its
terminating blank line). TTFT counts only events whose delta carries output text (content or
reasoning); role-only and empty chunks do not count. :func:`event_end` (where the last event
of a read ends) is the one piece the HTTP reader uses on the timing path, to cap an event's size.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from inferlab.records import ErrorKind

__all__ = ["ParsedStream", "error_message_of", "event_end", "parse_stream"]

_EVENT_END = re.compile(rb"\r?\n\r?\n")
_FIELDS = (b"event", b"id", b"retry")  # the other SSE fields (WHATWG HTML, server-sent events)


@dataclass(slots=True)
class ParsedStream:
    event_ns: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    usage_prompt_tokens: int | None = None
    usage_completion_tokens: int | None = None
    saw_done: bool = False
    error_kind: ErrorKind | None = None
    error_message: str | None = None


def _text_of(choice: dict[str, Any]) -> str:
    text = choice.get("text")
    if isinstance(text, str):
        return text
    delta = choice.get("delta") or choice.get("message") or {}
    if not isinstance(delta, dict):
        return ""
    out = ""
    for key in ("reasoning_content", "reasoning", "content"):
        v = delta.get(key)
        if isinstance(v, str):
            out += v
    return out


def _apply(obj: Any, t: int, out: ParsedStream) -> None:
    if not isinstance(obj, dict):
        raise ValueError("event data is not a JSON object")
    if "error" in obj and not obj.get("choices"):
        out.error_kind = ErrorKind.HTTP
        out.error_message = "in-stream error: " + error_message_of(obj)
        return
    usage = obj.get("usage")
    if isinstance(usage, dict):
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(pt, int):
            out.usage_prompt_tokens = pt
        if isinstance(ct, int):
            out.usage_completion_tokens = ct
    choices = obj.get("choices")
    if isinstance(choices, list) and choices:
        choice = choices[0]
        if not isinstance(choice, dict):
            raise ValueError("choices[0] is not an object")
        text = _text_of(choice)
        if text:
            out.event_ns.append(t)
            out.texts.append(text)
        fr = choice.get("finish_reason")
        if isinstance(fr, str):
            out.finish_reason = fr


def event_end(tail: bytes, chunk: bytes) -> int:
    """Index in ``chunk`` just past its last event terminator (a blank line), else 0."""
    i, j = chunk.rfind(b"\n\n"), chunk.rfind(b"\n\r\n")
    if i >= 0 or j >= 0:
        return max(i + 2, j + 3)
    both = tail + chunk[:3]
    i, j = both.rfind(b"\n\n"), both.rfind(b"\n\r\n")
    if i >= 0 or j >= 0:
        return max(0, max(i + 2, j + 3) - len(tail))
    return 0


def parse_stream(pieces: list[tuple[int, bytes]], end_ns: int) -> ParsedStream:
    """Parse a de-chunked SSE body given as ``(arrival_ns, bytes)`` pieces.

    A non-SSE JSON body (a server that ignored ``stream``) becomes one event at ``end_ns``.
    """
    out = ParsedStream()
    body = b"".join(p for _, p in pieces)
    if not body.strip():
        return out
    if body.lstrip().startswith(b"{"):
        try:
            _apply(json.loads(body), end_ns, out)
        except ValueError as exc:
            out.error_kind = ErrorKind.MALFORMED
            out.error_message = f"response is not valid JSON: {exc}"
        return out
    ends = list(accumulate(len(p) for _, p in pieces))
    start = 0
    spans: list[tuple[int, int, int]] = []
    for m in _EVENT_END.finditer(body):
        spans.append((start, m.start(), m.end() - 1))
        start = m.end()
    if body[start:].strip():  # last event without its blank line
        spans.append((start, len(body), len(body) - 1))
    for s, e, last in spans:
        t = pieces[min(bisect_right(ends, last), len(pieces) - 1)][0]
        data = _event_data(body[s:e])
        if data is None:
            continue
        if isinstance(data, str):
            if out.error_kind is None:
                out.error_kind = ErrorKind.MALFORMED
                out.error_message = data
            continue
        if data.strip() == b"[DONE]":
            out.saw_done = True
            continue
        try:
            _apply(json.loads(data), t, out)
        except (ValueError, UnicodeDecodeError) as exc:
            if out.error_kind is None:
                out.error_kind = ErrorKind.MALFORMED
                out.error_message = f"malformed event {data[:80]!r}: {exc}"
    return out


def _event_data(block: bytes) -> bytes | str | None:
    """The joined ``data:`` values of one event; None without any; a message (str) when a line
    is no SSE field at all (a server writing raw JSON or garbage into the stream)."""
    data_lines = []
    for raw in block.split(b"\n"):
        line = raw.rstrip(b"\r")
        if line.startswith(b"data:"):
            v = line[5:]
            data_lines.append(v[1:] if v.startswith(b" ") else v)
        elif line and not line.startswith(b":") and line.partition(b":")[0] not in _FIELDS:
            return f"not an SSE field line: {line[:80]!r}"
    return b"\n".join(data_lines) if data_lines else None


def error_message_of(obj: Any, fallback: str = "") -> str:
    """The server's own message from an OpenAI/vLLM/SGLang/TGI-style error body."""
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str):
            return err
        for key in ("message", "detail"):
            if isinstance(obj.get(key), str):
                return str(obj[key])
    return fallback
