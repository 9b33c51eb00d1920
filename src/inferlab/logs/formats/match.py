"""The matcher: ``read(fmt, text, lookahead)`` turns a line into a ``Record`` of ``fmt``
(or None when it is not one): it finds the prefix, joins a hard wrap, and takes the values
from the pattern, the ``key: value`` items or the fields' own patterns. A full-line format is
read by its compiled ``read_at`` (``LineFormat``), the same values faster.
"""

from __future__ import annotations

import re
from typing import Any

from inferlab.logs.formats.base import LineFormat, Record, Wrap, own_values
from inferlab.logs.reader import Lookahead

__all__ = ["continuation", "read"]

#: what starts a new log record (a line that matches is not the rest of a wrapped one)
_RECORD_START = re.compile(
    r"(?:\(|\[|INFO|WARNING|ERROR|DEBUG|CRITICAL|[IWEF]\d{4} |\d{4}-\d\d-\d\d|\d\d-\d\d \d\d:"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:|Traceback|\s+File |\d+\.\d\d\.\d{3}\.\d{3} |#|\w+(?:Error|"
    r"Exception|Warning):)"
)


def _locate(fmt: LineFormat, text: str) -> tuple[int, str]:
    """Where the record starts (the last-starting of its prefixes) and that prefix."""
    if len(fmt.prefix) == 1:
        p = fmt.prefix[0]
        return text.find(p), p
    at, found = -1, ""
    for p in fmt.prefix:
        j = text.find(p)
        if j > at:
            at, found = j, p
    return at, found


def continuation(la: Lookahead, n: int = 3) -> list[str]:
    """The following lines that look like the rest of a hard-wrapped line (up to ``n``)."""
    out = []
    for t in la.lines(n):
        if not t or _RECORD_START.match(t):
            break
        out.append(t)
    return out


def _join(w: Wrap, text: str, at: int, la: Lookahead) -> tuple[str, int]:
    """``text`` joined with its continuation lines until ``w`` holds (unchanged if never)."""
    if w.until.search(text) or (w.whole_if and w.whole_if in text[at:]):
        return text, 0
    joined = text
    for i, c in enumerate(continuation(la)):
        joined += c
        if w.until.search(joined):
            return joined, i + 1
    return text, 0


def _from_pairs(fmt: LineFormat, items: dict[str, str]) -> tuple[Any, ...] | None:
    if fmt.need_keys and not any(k in items for k in fmt.need_keys):
        return None
    values: list[Any] = []
    for f in fmt.fields:
        raw = next((items[k] for k in f.keys if items.get(k)), None)
        values.append(None if raw is None else f.type(raw))
    return tuple(values)


def _pairs(fmt: LineFormat, text: str, start: int) -> list[tuple[Any, ...]] | None:
    """The values of each record of a ``pairs`` format (one per ``each`` literal)."""
    assert fmt.pairs is not None
    if fmt.each:
        parts = text.split(fmt.each)
        segs = [fmt.each + p for p in parts[1:]] if len(parts) > 1 else [text]
    else:
        segs = [text[start:]]
    out = [v for v in (_from_pairs(fmt, fmt.pairs(s)) for s in segs) if v is not None]
    if not out:
        return None
    if fmt.own:
        out = [own_values(fmt, text, v) for v in out]
    return out


def read(fmt: LineFormat, text: str, la: Lookahead, at: int = -1) -> Record | None:
    """``text`` as a record of ``fmt``, or None when it is not one. ``at``: where the prefix
    starts, when the caller has found it already (a format of one prefix)."""
    found = fmt.prefix[0]
    if at < 0:
        at, found = _locate(fmt, text)
        if at < 0:
            return None
    for n in fmt.need:
        if n not in text:
            return None
    if fmt.full:
        return fmt.read_at(text, at)
    used = 0
    if fmt.wrap is not None:
        text, used = _join(fmt.wrap, text, at, la)
        if used:
            at, found = _locate(fmt, text)
    end = len(text)
    if fmt.pairs is not None:
        recs = _pairs(fmt, text, at + len(found) + fmt.skip)
        if recs is None:
            return None
        return (fmt, text, at, end, recs[0], used, tuple(recs[1:]))
    values: tuple[Any, ...] = (None,) * len(fmt.fields)
    if fmt.pattern is not None:
        m = fmt.pattern.search(text)
        if m is None:
            return None
        values, end = fmt.convert(m), m.end()
    if fmt.own:
        values = own_values(fmt, text, values)
    return (fmt, text, at, end, values, used, ())
