"""Reader of Nsight Systems SQLite exports (``nsys export --type sqlite``).

The schema changes between nsys versions, so columns are read from ``PRAGMA table_info``:
kernel names from ``demangledName`` (else ``shortName``, ``mangledName``, ``name``), joined to
``StringIds`` when they are ids; grids from ``gridX·gridY·gridZ``; launches from
``CUPTI_ACTIVITY_KIND_RUNTIME``; NVTX ranges (host times) from ``NVTX_EVENTS``; the SM count from
``TARGET_INFO_GPU.smCount`` or ``TARGET_INFO_CUDA_DEVICE.numMultiprocessors``. Times are ns in the
file, µs here."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from inferlab.errors import TraceError

from .trace import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, GpuRange, Trace, TraceBuilder

__all__ = ["read_nsys"]

_NAME_COLS = ("demangledName", "shortName", "mangledName", "name")
_SM_TABLES = ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_CUDA_GPU")
_SM_COLS = ("smCount", "numMultiprocessors", "multiProcessorCount", "multiprocessorCount")


def _cols(db: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]


def _name_expr(db: sqlite3.Connection, table: str, cols: list[str], cands: tuple[str, ...]) -> str:
    """SQL for a row's name: the first candidate column, through StringIds when it is an id."""
    col = next((c for c in cands if c in cols), None)
    if col is None:
        return "'?'"
    has_strings = bool(
        db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='StringIds'").fetchone()
    )
    typ = db.execute(f'SELECT typeof("{col}") FROM "{table}" LIMIT 1').fetchone()
    if has_strings and (typ is None or typ[0] == "integer"):
        return f"COALESCE((SELECT value FROM StringIds WHERE id = t.\"{col}\"), '?')"
    return f't."{col}"'


def _opt(cols: list[str], name: str, default: str = "-1") -> str:
    return f't."{name}"' if name in cols else default


def read_nsys(path: Path) -> Trace:
    """Read kernels, memcpy/memset, runtime launches, NVTX ranges and the SM count."""
    b = TraceBuilder(str(path), "nsys")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise TraceError(f"{path}: cannot open as SQLite: {exc}") from exc
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables and not any(
            t in tables for t in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
        ):
            raise TraceError(
                f"{path}: no CUPTI_ACTIVITY_KIND_KERNEL table: not an Nsight Systems export, or "
                "recorded without CUDA tracing (nsys profile --trace=cuda)"
            )
        for table, read in _READERS:
            if table in tables:
                _read_table(path, db, table, tables, read, b)
        _sm_count(db, tables, b)
    except sqlite3.DatabaseError as exc:
        raise TraceError(f"{path}: unreadable Nsight Systems export: {exc}") from exc
    finally:
        db.close()
    return b.build()


def _read_table(
    path: Path,
    db: sqlite3.Connection,
    table: str,
    tables: set[str],
    read: Callable[[sqlite3.Connection, str, list[str], set[str], TraceBuilder], None],
    b: TraceBuilder,
) -> None:
    """One table through its reader; a value of the wrong type is a TraceError naming it."""
    try:
        read(db, table, _cols(db, table), tables, b)
    except _Missing as exc:
        cols = _cols(db, table)
        raise TraceError(f"{path}: table {table} has no column {exc} (columns: {cols})") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise TraceError(
            f"{path}: table {table} holds a value of the wrong type or range ({exc}); "
            "the export is damaged or not from nsys"
        ) from None


class _Missing(Exception):
    """A required column is missing (its name is the message)."""


def _kernels(
    db: sqlite3.Connection, t: str, c: list[str], tables: set[str], b: TraceBuilder
) -> None:
    for need in ("start", "end"):
        if need not in c:
            raise _Missing(repr(need))
    grid = (
        't."gridX" * t."gridY" * t."gridZ"'
        if all(g in c for g in ("gridX", "gridY", "gridZ"))
        else "-1"
    )
    sql = (
        f'SELECT t."start", t."end", {_name_expr(db, t, c, _NAME_COLS)}, {grid}, '
        f'{_opt(c, "streamId")}, {_opt(c, "correlationId")} FROM "{t}" t'
    )
    for s, e, name, blocks, stream, corr in db.execute(sql):
        b.op(
            KIND_KERNEL,
            str(name),
            s / 1000,
            (e - s) / 1000,
            int(blocks if blocks is not None else -1),
            int(stream if stream is not None else -1),
            int(corr if corr is not None else -1),
        )


def _copies(
    db: sqlite3.Connection, t: str, c: list[str], tables: set[str], b: TraceBuilder
) -> None:
    kind, label = (KIND_MEMCPY, "Memcpy") if t.endswith("MEMCPY") else (KIND_MEMSET, "Memset")
    sql = (
        f'SELECT t."start", t."end", {_opt(c, "streamId")}, {_opt(c, "correlationId")} FROM "{t}" t'
    )
    for s, e, stream, corr in db.execute(sql):
        b.op(
            kind,
            label,
            s / 1000,
            (e - s) / 1000,
            -1,
            int(stream if stream is not None else -1),
            int(corr if corr is not None else -1),
        )


def _launches(
    db: sqlite3.Connection, t: str, c: list[str], tables: set[str], b: TraceBuilder
) -> None:
    sql = (
        f'SELECT t."start", t."end", {_name_expr(db, t, c, ("nameId", "name"))}, '
        f'{_opt(c, "correlationId")} FROM "{t}" t'
    )
    for s, e, name, corr in db.execute(sql):
        b.launch(str(name), s / 1000, (e - s) / 1000, int(corr if corr is not None else -1))


def _nvtx(db: sqlite3.Connection, t: str, c: list[str], tables: set[str], b: TraceBuilder) -> None:
    text = 't."text"' if "text" in c else "NULL"
    if "textId" in c and "StringIds" in tables:
        text = f'COALESCE({text}, (SELECT value FROM StringIds WHERE id = t."textId"))'
    sql = f'SELECT t."start", t."end", {text} FROM NVTX_EVENTS t WHERE t."end" IS NOT NULL'
    for s, e, name in db.execute(sql):
        if name is not None and e >= s:
            b.ranges.append(GpuRange(str(name), s / 1000, e / 1000, "cpu"))


_READERS = (
    ("CUPTI_ACTIVITY_KIND_KERNEL", _kernels),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", _copies),
    ("CUPTI_ACTIVITY_KIND_MEMSET", _copies),
    ("CUPTI_ACTIVITY_KIND_RUNTIME", _launches),
    ("NVTX_EVENTS", _nvtx),
)


def _sm_count(db: sqlite3.Connection, tables: set[str], b: TraceBuilder) -> None:
    for t in _SM_TABLES:
        if t not in tables:
            continue
        c = _cols(db, t)
        col = next((x for x in _SM_COLS if x in c), None)
        if col is None:
            continue
        row = db.execute(
            f'SELECT "{col}", {_opt(c, "name", "NULL")} FROM "{t}" t LIMIT 1'
        ).fetchone()
        if row and isinstance(row[0], int) and row[0] > 0:
            b.sm_count, b.device = row[0], (str(row[1]) if row[1] is not None else None)
            return
