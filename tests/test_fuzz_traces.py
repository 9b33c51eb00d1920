"""Fuzzing the readers of what servers and profilers produce: Kineto traces, Nsight Systems
exports and the SSE decoder — from a real H200 trace, the real nsys schema and the reference
engine's wire format (property and settings: ``tests/fuzzing.py``)."""

from __future__ import annotations

import contextlib
import functools
import gzip
import itertools
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferlab.load.sse import parse_stream
from inferlab.profile import read_trace
from inferlab.sim import api
from inferlab.sim.tokenizer import WordTokenizer
from support.fuzzing import (
    FIX,
    byte_mutation,
    fuzz,
    hard_limit,
    parses_or_names_file,
    tree_mutation,
    tree_target,
    write,
)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# ----------------------------------------------------------------------------- profiler traces


def _kineto_seed() -> dict[str, Any]:
    """The real H200 FP8-decode trace, cut to its first 150 kernels and flow events (the
    header, annotations, runtime calls and the rest kept): a seed small enough to mutate."""
    with gzip.open(FIX / "traces/fp8_decode_default.json.gz", "rt") as fh:
        doc: dict[str, Any] = json.load(fh)
    seen: dict[str, int] = {}
    keep = []
    for ev in doc["traceEvents"]:
        cat = ev.get("cat")
        if cat in ("kernel", "ac2g"):
            seen[cat] = seen.get(cat, 0) + 1
            if seen[cat] > 150:
                continue
        keep.append(ev)
    doc["traceEvents"] = keep
    return doc


KINETO = _kineto_seed()
KINETO_TEXT = json.dumps(KINETO).encode()
KINETO_TREE = tree_target([KINETO])


def test_kineto_seed_is_a_real_trace(tmp: Path) -> None:
    tr = read_trace(write(tmp, "seed.json", KINETO_TEXT))
    assert tr.n_ops == 150 and tr.sm_count == 132


@fuzz(120)
@given(data=st.data())
def test_kineto_mutated(tmp: Path, data: st.DataObject) -> None:
    if data.draw(st.booleans()):
        raw = data.draw(byte_mutation(KINETO_TEXT))
    else:
        raw = json.dumps(data.draw(tree_mutation(KINETO_TREE[0][0], KINETO_TREE[1][0]))).encode()
    name = "k.json"
    if data.draw(st.booleans()):
        raw, name = gzip.compress(raw, compresslevel=1), "k.json.gz"
    parses_or_names_file(read_trace, write(tmp, name, raw))


@fuzz(60)
@given(data=st.data())
def test_kineto_truncated(tmp: Path, data: st.DataObject) -> None:
    gz = data.draw(st.booleans())
    raw = gzip.compress(KINETO_TEXT, compresslevel=1) if gz else KINETO_TEXT
    cut = data.draw(st.integers(0, len(raw) - 1))
    parses_or_names_file(read_trace, write(tmp, "t.json.gz" if gz else "t.json", raw[:cut]))


@functools.cache
def _nsys_seed() -> bytes:
    from test_profile import _nsys_db  # the export's real schema (nsys 2024.6, schema 3.16)

    with tempfile.TemporaryDirectory() as d:
        return _nsys_db(Path(d) / "seed.sqlite").read_bytes()


_COUNT = itertools.count()
SQL_VALUES = st.none() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=True) | st.text(max_size=8) | st.binary(max_size=8)  # fmt: skip


@fuzz(120)
@given(data=st.data())
def test_nsys_mutated(tmp: Path, data: st.DataObject) -> None:
    """A real-schema export with values of any SQLite type written into its columns, tables
    dropped or renamed, or its pages damaged."""
    seed = _nsys_seed()
    path = tmp / f"n{next(_COUNT)}.sqlite"
    if data.draw(st.booleans()):
        path.write_bytes(seed[:100] + data.draw(byte_mutation(seed[100:])))  # header kept
    else:
        path.write_bytes(seed)
        db = sqlite3.connect(path)
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for _ in range(data.draw(st.integers(1, 4))):
            table = data.draw(st.sampled_from(tables))
            cols = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
            op = data.draw(st.sampled_from(["set", "set", "drop", "rename", "delete"]))
            if op == "set" and cols:
                col = data.draw(st.sampled_from(cols))
                with contextlib.suppress(sqlite3.Error):
                    db.execute(f'UPDATE "{table}" SET "{col}" = ?', (data.draw(SQL_VALUES),))
            elif op == "drop":
                db.execute(f'DROP TABLE IF EXISTS "{table}"')
                tables.remove(table)
            elif op == "rename" and cols:
                col = data.draw(st.sampled_from(cols))
                with contextlib.suppress(sqlite3.Error):
                    db.execute(f'ALTER TABLE "{table}" RENAME COLUMN "{col}" TO "x{col}"')
            elif op == "delete":
                db.execute(f'DELETE FROM "{table}"')
            if not tables:
                break
        db.commit()
        db.close()
    parses_or_names_file(read_trace, path)
    for leftover in tmp.glob(path.name + "*"):
        leftover.unlink()


# ----------------------------------------------------------------------------- SSE decoder


def _sse_seeds() -> list[bytes]:
    """De-chunked SSE bodies as the reference engine writes them (vLLM's wire format):
    completions and chat, with usage, 1 and 3 tokens per event."""
    tok = WordTokenizer()
    words = [b" " + w.encode() for w in tok.vocab]
    out = []
    for endpoint in ("completions", "chat"):
        for k in (1, 3):
            req = api.GenRequest(endpoint, True, True, 6, "hello there", 2)  # type: ignore[arg-type]
            r = api.render(req, "cmpl-1", 0, '"m"', words, [5, 6, 7, 8, 9, 10], k, b"")
            raw = r.head + b"".join(r.frames)
            body, pos = b"", 0
            while True:  # de-chunk
                eol = raw.index(b"\r\n", pos)
                size = int(raw[pos:eol], 16)
                if size == 0:
                    break
                body += raw[eol + 2 : eol + 2 + size]
                pos = eol + 4 + size
            out.append(body)
    return out


SSE = _sse_seeds()


@fuzz(400, deadline_ms=500)
@given(data=st.data())
def test_sse_decoder_never_raises(data: st.DataObject) -> None:
    """Any body, cut into any reads: a result (faults recorded on it), never an exception."""
    if data.draw(st.integers(0, 3)) == 0:
        body = data.draw(st.binary(max_size=2048))
    else:
        body = data.draw(byte_mutation(data.draw(st.sampled_from(SSE))))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(body)), max_size=12))))
    bounds = [0, *cuts, len(body)]
    pieces = [(1000 + i, body[a:b]) for i, (a, b) in enumerate(itertools.pairwise(bounds)) if b > a]
    with hard_limit():
        out = parse_stream(pieces, 10_000)
    assert len(out.event_ns) == len(out.texts)
    assert out.event_ns == sorted(out.event_ns)
    assert (out.error_kind is None) == (out.error_message is None)
