"""Stream a server log in bounded memory and hand the lines that may matter to a visitor.

The file is read in blocks of ``BLOCK`` bytes. Each block is searched for a short list of
*anchors* (literal byte strings, one ``bytes.find`` pass each); only the lines that hold an
anchor are decoded and visited, and the rest are counted. A visitor sees:

- the 1-based number of the line in the original file (``\\n`` ends a line; ``\\r``, as tqdm
  bars use it, does not: a line holding ``\\r`` is visited once per ``\\r``-separated segment
  that has text, all with the same number);
- the segment's text, decoded as UTF-8 with ``errors="replace"``;
- a ``Lookahead`` on the following lines (at least ``LOOKAHEAD`` of them, unless the file ends),
  so a parser can join a terminal hard wrap or read a list that follows a header line.

``.gz`` files are decompressed on the fly; other compressed or binary files are refused with a
``LogError`` naming the file. A last line without a newline is read like any other.
"""

from __future__ import annotations

import builtins
import gzip
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from inferlab.engines.logs import clean_line
from inferlab.errors import LogError

__all__ = ["BLOCK", "LOOKAHEAD", "Lookahead", "ScanStats", "open_log", "scan"]

#: bytes read per block
BLOCK = 1 << 20
#: lines after a visited line that are always in memory
LOOKAHEAD = 16
#: a line longer than this (no newline in sight) is visited in pieces of this size
MAX_LINE = 1 << 24
#: bytes sniffed at the start for NUL (binary files)
SNIFF = 1 << 16
#: bytes of the log's end kept for the launch-failure classification (a traceback's worth)
TAIL = 1 << 16

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"PK\x03\x04", "zip"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"\x04\x22\x4d\x18", "lz4"),
)


@dataclass
class ScanStats:
    """What a scan read: ``lines`` in the file, ``bytes`` of text (decompressed), lines visited."""

    lines: int = 0
    bytes: int = 0
    visited: int = 0
    compressed: str | None = None
    truncated: bool = False
    #: the last ``TAIL`` bytes of the log, cut at a line start, and the number of its first line
    tail: builtins.bytes = b""
    tail_first_line: int = 1


class Lookahead:
    """The lines after a visited line, decoded and cleaned (see ``clean_line``) on demand."""

    __slots__ = ("_buf", "_cache", "_pos")

    def __init__(self, buf: bytes, pos: int) -> None:
        self._buf = buf
        self._pos = pos  # index of the newline ending the visited line (or len(buf))
        self._cache: list[str] | None = None

    def lines(self, n: int = LOOKAHEAD) -> list[str]:
        """Up to ``n`` following lines (fewer at the end of the file), cleaned."""
        if self._cache is None or len(self._cache) < n:
            out: list[str] = []
            pos = self._pos
            buf = self._buf
            while len(out) < n and pos < len(buf):
                start = pos + 1
                end = buf.find(b"\n", start)
                if end < 0:
                    end = len(buf)
                if start > len(buf):
                    break
                raw = buf[start:end]
                out.append(clean_line(raw.decode("utf-8", "replace")))
                pos = end
            self._cache = out
        return self._cache[:n]


class _SplitLookahead(Lookahead):
    """A ``Lookahead`` over a block already decoded and split at ``\\n`` (the dense path):
    the same lines as ``Lookahead`` on the block's bytes."""

    __slots__ = ("_idx", "_split")

    def __init__(self, split: list[str], idx: int) -> None:
        self._split = split
        self._idx = idx  # index of the visited line in ``split``
        self._cache = None

    def lines(self, n: int = LOOKAHEAD) -> list[str]:
        if self._cache is None or len(self._cache) < n:
            i = self._idx + 1
            self._cache = [clean_line(t) for t in self._split[i : i + n]]
        return self._cache[:n]


def _refuse(path: Path, what: str) -> LogError:
    return LogError(f"{path}: {what}; inferlab reads text logs, plain or gzip (.gz)")


def open_log(path: str | Path) -> tuple[BinaryIO, str | None]:
    """Open ``path`` for reading as bytes (gunzipped when it is gzip); ``LogError`` when it is
    missing, a directory, or compressed in another format. Returns the stream and the
    compression it had (``"gzip"`` or None)."""
    p = Path(path)
    if not p.exists():
        raise LogError(f"{p}: no such file")
    if p.is_dir():
        raise LogError(f"{p}: is a directory, not a log file")
    try:
        fh: BinaryIO = p.open("rb")
        head = fh.read(8)
        fh.seek(0)
    except OSError as exc:
        raise LogError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if head.startswith(b"\x1f\x8b"):
        fh.close()  # a GzipFile given a fileobj never closes it: this one owns its file
        return gzip.GzipFile(p, mode="rb"), "gzip"  # type: ignore[return-value]
    for magic, name in _MAGIC:
        if head.startswith(magic):
            fh.close()
            raise _refuse(p, f"a {name}-compressed file (decompress it first)")
    return fh, None


def _read(fh: BinaryIO, path: Path, stats: ScanStats) -> bytes:
    try:
        return fh.read(BLOCK)
    except EOFError:  # a .gz still being written: read what is there
        stats.truncated = True
        return b""
    except (OSError, zlib.error) as exc:
        raise LogError(f"{path}: corrupt {stats.compressed or 'file'}: {exc}") from None


#: ``visit(line_no, text, lookahead)``; the lookahead is valid during the call only (the dense
#: path moves one per block from line to line)
Visitor = Callable[[int, str, Lookahead], int]

#: a block where at least this share of the lines hold an anchor is split into lines and each
#: line tested (one pass over the block); below it, each anchor is searched in the bytes (one
#: ``bytes.find`` pass per anchor, only the hit lines decoded). The next block takes the path
#: that the share of the one before calls for.
DENSE = 0.15
#: what ``bytes.strip()`` strips (the dense path tests decoded text with the same set)
_WS = " \t\n\r\x0b\x0c"


def scan(
    path: str | Path, anchors: Sequence[bytes], visit: Visitor, *, first: int = 1
) -> ScanStats:
    """Stream ``path``; call ``visit(line_no, text, lookahead)`` for every line (segment) that
    holds one of ``anchors``, and for the first ``first`` lines whatever they hold. ``visit``
    returns how many following lines it consumed (joined into its own), which are then skipped.
    """
    p = Path(path)
    fh, comp = open_log(p)
    stats = ScanStats(compressed=comp)
    carry = b""
    line_no = 1  # number of the line starting at buf[0]
    skip_until = 0
    sniffed = False
    tail = b""
    # the dense path tests decoded text: only for ASCII anchors (a byte match is a text match)
    text_anchors = (
        tuple(a.decode("ascii") for a in anchors) if all(a.isascii() for a in anchors) else None
    )
    dense: bool | None = None  # None: the first block, probed
    try:
        while True:
            chunk = _read(fh, p, stats)
            eof = not chunk
            stats.bytes += len(chunk)
            buf = carry + chunk if carry else chunk
            if not sniffed and (len(buf) >= SNIFF or eof):
                sniffed = True
                _refuse_binary(p, buf, comp)
            if not buf:
                break
            end = _block_end(buf, eof)
            if end < 0:  # no line end yet: wait for more
                carry = buf
                continue
            n_nl = buf.count(b"\n", 0, end)
            if dense is None:
                dense = _probe_dense(buf, end, anchors)
            if dense and text_anchors is not None:
                skip_until, n_hits = _dense(
                    buf, end, n_nl, line_no, first, skip_until, text_anchors, visit, stats
                )
            else:
                skip_until, n_hits = _sparse(
                    buf, end, line_no, first, skip_until, anchors, visit, stats
                )
            dense = n_hits >= DENSE * max(1, n_nl)
            line_no += n_nl  # a piece of a monster line does not advance
            tail = (tail + buf[max(0, end - TAIL) : end])[-TAIL:]
            carry = buf[end:]
            if eof:
                if buf[-1:] != b"\n":
                    line_no += 1  # a partial last line is a line
                break
    finally:
        fh.close()
    stats.lines = line_no - 1
    _set_tail(stats, tail)
    return stats


def _refuse_binary(p: Path, buf: bytes, comp: str | None) -> None:
    """Refuse a file whose first ``SNIFF`` bytes hold a NUL (not a text log)."""
    nul = buf.find(b"\x00", 0, SNIFF)
    if nul >= 0:
        what = "gzip of a binary file" if comp else "a binary file"
        raise _refuse(p, f"{what} (NUL byte at offset {nul})")


def _block_end(buf: bytes, eof: bool) -> int:
    """Where this block's whole lines end in ``buf``; -1: no line end yet (read more). A line
    of ``MAX_LINE`` bytes or more is cut there (visited in pieces, under one line number)."""
    if eof:
        return len(buf)
    end = _cut(buf)
    if end < 0 and len(buf) >= MAX_LINE:
        return len(buf)
    return end


def _probe_dense(buf: bytes, end: int, anchors: Sequence[bytes]) -> bool:
    """Whether the share of hit lines in the first ``SNIFF`` bytes calls for the dense path."""
    probe = buf.rfind(b"\n", 0, min(end, SNIFF)) + 1
    n_probe = buf.count(b"\n", 0, probe)
    return len(_hits(buf, probe, anchors)) >= DENSE * max(1, n_probe)


def _set_tail(stats: ScanStats, tail: bytes) -> None:
    """The last whole lines (up to ``TAIL`` bytes) and the number of the first of them."""
    if len(tail) == TAIL and b"\n" in tail:
        tail = tail[tail.index(b"\n") + 1 :]  # drop the partial first line
    n_tail = tail.count(b"\n") + (1 if tail and tail[-1:] != b"\n" else 0)
    stats.tail, stats.tail_first_line = tail, stats.lines - n_tail + 1


def _sparse(
    buf: bytes,
    end: int,
    line_no: int,
    first: int,
    skip_until: int,
    anchors: Sequence[bytes],
    visit: Visitor,
    stats: ScanStats,
) -> tuple[int, int]:
    """Visit the hit lines of ``buf[:end]`` (line ``line_no`` starts at 0) found by one
    ``bytes.find`` pass per anchor; returns ``skip_until`` and the number of hit lines."""
    hits = _hits(buf, end, anchors)
    if line_no <= first:
        pos, n = 0, line_no
        while n <= first and pos < end:
            hits.add(pos)
            nl = buf.find(b"\n", pos, end)
            if nl < 0:
                break
            pos, n = nl + 1, n + 1
    pos = 0
    for s in sorted(hits):
        line_no += buf.count(b"\n", pos, s)
        pos = s
        if line_no < skip_until:
            continue
        e = buf.find(b"\n", s, end)
        if e < 0:
            e = end
        la = Lookahead(buf, e)
        used = 0
        for seg in buf[s:e].split(b"\r"):
            if seg.strip():
                stats.visited += 1
                used = max(used, visit(line_no, seg.decode("utf-8", "replace"), la))
        if used:
            skip_until = line_no + used + 1
    return skip_until, len(hits)


def _hits(buf: bytes, end: int, anchors: Sequence[bytes]) -> set[int]:
    """The start offsets of the lines of ``buf[:end]`` that hold an anchor."""
    hits: set[int] = set()
    for a in anchors:
        j = buf.find(a, 0, end)
        while j >= 0:
            hits.add(buf.rfind(b"\n", 0, j) + 1)
            nl = buf.find(b"\n", j, end)
            if nl < 0:
                break
            j = buf.find(a, nl + 1, end)
    return hits


def _dense(
    buf: bytes,
    end: int,
    n_nl: int,
    line_no: int,
    first: int,
    skip_until: int,
    anchors: tuple[str, ...],
    visit: Visitor,
    stats: ScanStats,
) -> tuple[int, int]:
    """``_sparse`` for a block where most lines hit: the block (with its lookahead lines) is
    decoded once and split at ``\\n``; each line of ``buf[:end]`` is tested for the anchors.
    Decoding the whole block gives the same text as decoding each line: ``\\n`` and ``\\r``
    end any malformed UTF-8 sequence."""
    split = buf.decode("utf-8", "replace").split("\n")
    # the lines that start before ``end``: a piece or partial line at ``end`` is one more
    n_body = n_nl + (1 if end and buf[end - 1] != 10 else 0)
    n_hits = 0
    visited = stats.visited
    la = _SplitLookahead(split, 0)  # one per block, moved to each visited line
    always = first - line_no  # lines up to this index are visited whatever they hold
    for idx, line in enumerate(split[:n_body] if n_body < len(split) else split):
        if idx > always:
            for a in anchors:
                if a in line:
                    break
            else:
                continue
        n_hits += 1
        ln = line_no + idx
        if ln < skip_until:
            continue
        la._idx, la._cache = idx, None
        if "\r" in line:
            used = 0
            for seg in line.split("\r"):
                if seg.strip(_WS):
                    visited += 1
                    used = max(used, visit(ln, seg, la))
        elif idx > always or line.strip(_WS):  # a hit holds an anchor: never blank
            visited += 1
            used = visit(ln, line, la)
        else:
            used = 0
        if used:
            skip_until = ln + used + 1
    stats.visited = visited
    return skip_until, n_hits


def _cut(buf: bytes) -> int:
    """Index just after the newline that leaves ``LOOKAHEAD`` whole lines behind it; -1 when
    the buffer does not hold that many lines yet."""
    e = buf.rfind(b"\n")
    for _ in range(LOOKAHEAD):
        if e < 0:
            return -1
        e = buf.rfind(b"\n", 0, e)
    return -1 if e < 0 else e + 1
