"""A traceback in the log's end that began during a CUDA-graph capture (the capture began and
never ended): where it is, its last frame and its exception line."""

from __future__ import annotations

import re
from typing import Any

from inferlab.engines.logs import clean_line
from inferlab.logs.state import LogState

__all__ = ["capture_traceback"]

_TB_START = "Traceback (most recent call last):"
_TB_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_TB_EXC = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit)\b")
_TB_CHAIN = ("During handling of the above exception", "The above exception was the direct")
_DIGITS = str.maketrans("0123456789", "0000000000")


def capture_traceback(st: LogState, tail: list[str], first_line: int) -> None:
    """Set ``st.capture_traceback`` from the log's end (``tail``, whose first line is line
    ``first_line``): the first traceback that begins after a CUDA-graph capture started and
    never ended, with its last frame and its exception line (None when the log ends first).
    A prefix that the ``Traceback`` line carries (a timestamp, a process tag) is cut from the
    lines after it that carry one of the same shape (digits aside)."""
    begin = st.capture_begin
    if begin is None or (st.capture_end is not None and st.capture_end > begin):
        return
    lo = max(0, begin - first_line + 1)  # tail index of the first line after the begin
    start = next((i for i in range(lo, len(tail)) if _TB_START in tail[i]), None)
    if start is None:
        return
    head = clean_line(tail[start])
    prefix = head[: head.find(_TB_START)].translate(_DIGITS)
    body: list[str] = []
    for raw in tail[start + 1 :]:
        t = clean_line(raw)
        if prefix and t[: len(prefix)].translate(_DIGITS) == prefix:
            t = t[len(prefix) :]
        body.append(t)
    frame: dict[str, Any] | None = None
    exc: dict[str, Any] | None = None
    for i, t in enumerate(body):
        m = _TB_FRAME.match(t)
        if m:
            nxt = body[i + 1] if i + 1 < len(body) else ""
            code = "" if _TB_FRAME.match(nxt) or not nxt[:1].isspace() else nxt.strip()
            frame = {
                "line": first_line + start + 1 + i,
                "file": m.group(1),
                "lineno": int(m.group(2)),
                "function": m.group(3),
                "code": code,
            }
        elif not t.strip() or t[:1].isspace() or t.startswith(_TB_CHAIN) or _TB_START in t:
            continue  # a frame's code line, a caret line, a chained traceback
        elif _TB_EXC.match(t):
            exc = {"line": first_line + start + 1 + i, "text": t[:300]}
        else:
            break  # a line of another record: the traceback ended
    st.capture_traceback = {
        "capture_line": begin,
        "traceback_line": first_line + start,
        "last_frame": frame,
        "exception": exc,
    }
