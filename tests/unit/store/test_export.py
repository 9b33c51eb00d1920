"""Export from the store (``store.export``): every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.store import Store
from inferlab.store.export import FORMAT_VERSION, export, run_rows
from support.stored import add_run

STATS = ("mean", "p50", "p99")


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


def test_jsonl_and_parquet_carry_the_format_version_and_csv_stays_as_it_was(
    tmp_path: Path,
) -> None:
    import pyarrow.parquet as pq

    with Store(tmp_path / "x.db") as store:
        add_run(store, "C=1")
        runs = store.runs()
        for what in ("runs", "requests"):
            export(store, runs, what, "jsonl", tmp_path / f"{what}.jsonl")  # type: ignore[arg-type]
            export(store, runs, what, "csv", tmp_path / f"{what}.csv")  # type: ignore[arg-type]
        export(store, runs, "runs", "parquet", tmp_path / "runs.parquet")
    for what in ("runs", "requests"):
        records = [json.loads(x) for x in (tmp_path / f"{what}.jsonl").read_text().splitlines()]
        assert records and all(r["format_version"] == FORMAT_VERSION == 1 for r in records)
        assert list(records[0])[0] == "format_version"
        header = (tmp_path / f"{what}.csv").read_text().splitlines()[0].split(",")
        assert "format_version" not in header and header[0] == "run_id"
    meta = pq.read_schema(tmp_path / "runs.parquet").metadata
    assert meta[b"format_version"] == b"1"


def test_run_columns_are_the_metric_tables_export_columns_in_its_order(tmp_path: Path) -> None:
    from inferlab.stats.metrics import METRICS

    with Store(tmp_path / "x.db") as store:
        add_run(store, "C=1")
        (row,) = run_rows(store.runs())
    cols = list(row)[list(row).index("stop") + 1 :]
    want = [
        c
        for m in METRICS.values()
        for c in {"value": [m.name], "distribution": [f"{m.name}_{s}" for s in STATS]}.get(
            m.export or "", []
        )
    ]
    assert cols == want
    assert cols[:5] == ["ok", "output_tok_s", "request_s", "duration_s", "goodput_req_s"]
    assert row["output_tok_s"] == 5.0
