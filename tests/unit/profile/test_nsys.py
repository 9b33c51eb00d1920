"""Nsight Systems exports (``profile.nsys``), written in the real schema (tests/support/nsys.py):
steps, categories, occupancy, a foreign SQLite file, and fuzzed exports."""

from __future__ import annotations

import contextlib
import functools
import itertools
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferlab.errors import TraceError
from inferlab.profile import analyze, read_trace
from support.fuzzing import (
    byte_mutation,
    fuzz,
    parses_or_names_file,
)
from support.nsys import nsys_db  # the export's real schema (nsys 2024.6)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@functools.cache
def _nsys_seed() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        return nsys_db(Path(d) / "seed.sqlite").read_bytes()


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


# --- an Nsight Systems export (tests/support/nsys.py): steps, categories, occupancy


@pytest.mark.parametrize("old", [False, True])
def test_nsys_export_steps_categories_occupancy(tmp_path: Path, old: bool) -> None:
    tr = read_trace(nsys_db(tmp_path / "export.sqlite", old=old))
    assert tr.format == "nsys" and tr.sm_count == 132
    p = analyze(tr, segment="decode")
    assert p.n_steps == 3 and p.step_source.startswith("NVTX ranges matching 'decode'")
    # projected GPU span: first kernel start to last kernel end = 100 µs of kernels + 3 gaps
    assert all(s.span_us == pytest.approx(106.0) and s.kernels == 4 for s in p.steps)
    assert all(
        s.busy_us == pytest.approx(100.0) and s.idle_us == pytest.approx(6.0) for s in p.steps
    )
    cats = {r.name: r.share for r in p.categories}
    assert cats == pytest.approx(
        {"attention": 0.5, "fp8_gemm": 0.3, "communication": 0.1, "other": 0.1}
    )
    fp8 = next(r for r in p.categories if r.name == "fp8_gemm")
    assert fp8.amdahl_free == pytest.approx(1 / (1 - 30 / 106))
    occ = {o.name[:20]: (o.blocks, o.share) for o in p.occupancy}
    assert occ == {
        "void flash::flash_fw": (32, pytest.approx(0.5)),
        "_w8a8_block_fp8_matm": (66, pytest.approx(0.3)),
        "ncclDevKernel_AllRed": (16, pytest.approx(0.1)),
    }
    assert "GPU-bound" in p.verdict


def test_not_a_trace_and_a_foreign_sqlite(tmp_path: Path) -> None:
    f = tmp_path / "x.sqlite"
    sqlite3.connect(f).execute("CREATE TABLE t (a)").connection.commit()
    with pytest.raises(TraceError, match=r"x\.sqlite: no CUPTI_ACTIVITY_KIND_KERNEL table"):
        read_trace(f)
    g = tmp_path / "list.json"
    g.write_text("[1, 2]")
    with pytest.raises(TraceError, match=r"list\.json: invalid JSON at byte 0 .*expected '\{'"):
        read_trace(g)
    with pytest.raises(TraceError, match=r"nothere\.json: no such file"):
        read_trace(tmp_path / "nothere.json")
