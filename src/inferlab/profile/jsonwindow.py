"""A sliding decoded window over a byte stream, for the general (any layout) Kineto parser:
decodes UTF-8 across block edges, tracks the byte offset and line of every error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferlab.errors import TraceError

__all__ = ["BLOCK", "Window"]

BLOCK = 8 << 20


class Window:
    """A sliding decoded window over the byte stream, tracking byte offset and line."""

    def __init__(self, path: Path, read: Callable[[int], bytes]) -> None:
        self.path, self.read = path, read
        self.text, self.pos, self.eof = "", 0, False
        self.base_bytes, self.base_line = 0, 1
        self._pending = b""

    def more(self) -> bool:
        if self.eof:
            return False
        chunk = self.read(BLOCK)
        if not chunk:
            self.eof = True
            if self._pending:
                self._fail(self.pos, "the file ends inside a UTF-8 character")
            return False
        data = self._pending + chunk
        cut = len(data)
        while cut > 0 and cut > len(data) - 4 and (data[cut - 1] & 0xC0) == 0x80:
            cut -= 1
        if cut > 0 and data[cut - 1] >= 0xC0:
            cut -= 1
        self._pending = data[cut:]
        try:
            new = data[:cut].decode("utf-8")
        except UnicodeDecodeError as exc:
            self._fail(len(self.text), f"not UTF-8 text ({exc.reason})")
        if self.pos > BLOCK:
            dropped = self.text[: self.pos]
            self.base_bytes += len(dropped.encode("utf-8"))
            self.base_line += dropped.count("\n")
            self.text, self.pos = self.text[self.pos :], 0
        self.text += new
        return True

    def skip_ws(self) -> str:
        """Skip whitespace; returns the next character ('' at the end of the file)."""
        while True:
            t, p = self.text, self.pos
            while p < len(t) and t[p] in " \t\r\n":
                p += 1
            self.pos = p
            if p < len(t):
                return t[p]
            if not self.more():
                return ""

    def expect(self, chars: str, what: str) -> str:
        c = self.skip_ws()
        if c == "" or c not in chars:
            self._fail(
                self.pos,
                f"expected {what}, found {c!r}"
                if c
                else f"expected {what}, found the end of the file",
            )
        self.pos += 1
        return c

    def value(self, dec: json.JSONDecoder) -> Any:
        self.skip_ws()
        while True:
            try:
                obj, end = dec.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.more():
                    continue
                self._fail(
                    exc.pos,
                    exc.msg
                    + (
                        " (the file ends early: truncated?)"
                        if exc.pos >= len(self.text.rstrip()) - 1
                        or exc.msg.startswith("Unterminated string")
                        else ""
                    ),
                )
            # a number at the window's edge may continue in the next block
            if end >= len(self.text) and not self.eof and self.more():
                continue
            self.pos = end
            return obj

    def _fail(self, pos: int, msg: str) -> None:
        head = self.text[:pos]
        byte = self.base_bytes + len(head.encode("utf-8"))
        line = self.base_line + head.count("\n")
        col = pos - (head.rfind("\n") + 1) + 1
        raise TraceError(
            f"{self.path}: invalid JSON at byte {byte:,} (line {line}, column {col}): {msg}"
        )
