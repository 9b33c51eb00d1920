"""Export from the store (``store.export``): every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.store import Store
from inferlab.store.export import export
from support.stored import add_run


def test_export_formats(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    with Store(tmp_path / "x.db") as store:
        add_run(store, "C=1")
        add_run(store, "C=8")
        runs = store.runs()
        assert export(store, runs, "runs", "csv", tmp_path / "r.csv") == 2
        assert export(store, runs, "requests", "jsonl", tmp_path / "q.jsonl") == 4
        assert export(store, runs, "requests", "parquet", tmp_path / "q.parquet") == 4
    lines = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    assert lines[0]["ttft_ms"] == pytest.approx(5.0) and json.loads(lines[0]["event_tokens"]) == [
        1,
        3,
        2,
    ]
    assert (tmp_path / "r.csv").read_text().splitlines()[0].startswith("run_id,campaign")
    assert pq.read_table(tmp_path / "q.parquet").num_rows == 4
