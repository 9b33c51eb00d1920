"""Export from the store (``store.export``): every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.records import ErrorKind, RequestRecord
from inferlab.store import Store
from inferlab.store.export import export


def _records() -> list[RequestRecord]:
    ok = RequestRecord(
        0,
        "a",
        send_ns=10**15,
        end_ns=10**15 + 9_000_000,
        status=200,
        event_ns=[10**15 + 5_000_000, 10**15 + 7_123_457, 10**15 + 8_999_999],
        event_tokens=[1, 3, 2],
        usage_completion_tokens=6,
        input_tokens=12,
        requested_output_tokens=6,
        finish_reason="length",
        warnings=["w1"],
    )
    bad = RequestRecord(
        1,
        "b",
        warmup=True,
        scheduled_ns=5,
        send_ns=7,
        end_ns=9,
        status=503,
        error_kind=ErrorKind.HTTP,
        error_message="HTTP 503: overloaded",
    )
    return [ok, bad]


def _add(store: Store, label: str = "C=1", trial: int = 0, **kw: object) -> int:
    with store.transaction():
        cid = store.campaign_id("c")
        gid = store.config_id(
            cid,
            "base",
            engine="vllm",
            model="m",
            argv=["--api-key", "sk-SECRET-ARG", "--tp", "2"],
            env={"HF_TOKEN": "hf_SECRET_ENV", "NCCL_PROTO": "LL"},
        )
        eid = store.environment_id({"inferlab_version": "x", "gpu_name": "H200", "gpu_count": 8})
        return store.add_run(
            campaign_id=cid,
            config_id=gid,
            environment_id=eid,
            source="inferlab bench",
            definitions="inferlab/1",
            metrics_version=1,
            label=label,
            concurrency=1,
            rate=None,
            trial=trial,
            model="m",
            workload={"kind": "random", "input_tokens": 12},
            records=_records(),
            summary={"ok": 1, "output_tok_s": 5.0},
            **kw,
        )  # type: ignore[arg-type]


def test_export_formats(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    with Store(tmp_path / "x.db") as store:
        _add(store, "C=1")
        _add(store, "C=8")
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
