"""``scripts/stores.py``: the committed stores are ``.db.xz``; pack and unpack give the same bytes."""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from support import ROOT


def _stores() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stores", ROOT / "scripts" / "stores.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _store(path: Path, rows: int) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    con.executemany("INSERT INTO t (v) VALUES (?)", [(f"row {i}",) for i in range(rows)])
    con.commit()
    con.close()
    return path


def test_pack_then_unpack_gives_the_store_back_byte_for_byte(tmp_path: Path) -> None:
    s = _stores()
    raw = _store(tmp_path / "a.db", 2000)
    packed = s.pack(raw)
    assert packed.name == "a.db.xz" and packed.stat().st_size < raw.stat().st_size / 4
    out = s.unpack(packed, tmp_path / "copy.db")
    assert out.read_bytes() == raw.read_bytes()
    raw.unlink()
    assert s.unpack(packed) == raw and raw.read_bytes() == out.read_bytes()  # beside it


def test_a_stale_unpacked_copy_is_replaced_and_a_fresh_one_kept(tmp_path: Path) -> None:
    s = _stores()
    packed = s.pack(_store(tmp_path / "a.db", 10))
    dest = tmp_path / "a.db"
    dest.write_bytes(b"edited")
    os.utime(dest, (packed.stat().st_mtime + 5,) * 2)
    assert s.unpack(packed).read_bytes() == b"edited"  # newer than the pack: left alone
    os.utime(dest, (packed.stat().st_mtime - 5,) * 2)
    assert s.unpack(packed).read_bytes().startswith(b"SQLite format 3")


def test_a_raw_store_is_not_taken_for_a_packed_one(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"a\.db is not a packed store \(expected NAME\.db\.xz\)"):
        _stores().unpack(_store(tmp_path / "a.db", 1))


def test_no_raw_store_is_committed() -> None:
    """The light tree (issue 47): the H200 stores and the golden demo store are committed packed."""
    tracked = subprocess.run(
        ["git", "ls-files", "benchmarks", "tests/fixtures"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [f for f in tracked if f.endswith(".db")] == []
    packed = {
        "benchmarks/results/h200-vllm.db.xz",
        "benchmarks/results/h200-transformers.db.xz",
        "tests/fixtures/golden/stores/demo-sim.db.xz",
    }
    assert packed <= set(tracked)


def test_the_command_line_unpacks_a_named_store_and_names_a_missing_one(tmp_path: Path) -> None:
    s = _stores()
    packed = s.pack(_store(tmp_path / "a.db", 5))
    (tmp_path / "a.db").unlink()
    assert s.main(["stores.py", "unpack", str(packed)]) == 0
    assert (tmp_path / "a.db").read_bytes().startswith(b"SQLite format 3")
    with pytest.raises(SystemExit, match=r"b\.db\.xz does not exist"):
        s.main(["stores.py", "unpack", str(tmp_path / "b.db.xz")])
    assert s.main(["stores.py", "bogus"]) == 2
