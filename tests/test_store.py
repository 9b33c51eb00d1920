"""The SQLite store: raw samples round-trip, versions, bad files, crash safety, export."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlab.errors import StoreError
from inferlab.records import ErrorKind, RequestRecord
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import SCHEMA_VERSION, Store
from inferlab.store.export import export
from inferlab.store.schema import MIGRATIONS
from support.simproc import start_sim


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


def test_raw_samples_round_trip_exactly(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        rid = _add(store)
        got = store.requests(rid)
        runs = store.runs(campaign="c")
    assert got == _records()
    assert len(runs) == 1 and runs[0].n_requests == 2 and runs[0].environment["gpu_count"] == 8
    assert runs[0].summary == {"ok": 1, "output_tok_s": 5.0}


def test_wal_mode_and_version(tmp_path: Path) -> None:
    Store(tmp_path / "x.db").close()
    db = sqlite3.connect(tmp_path / "x.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))


def test_v1_database_is_upgraded_keeping_its_runs(tmp_path: Path) -> None:
    """A file written by schema 1 opens under schema 2: runs kept, findings/analyses usable."""
    from inferlab.store.schema import APPLICATION_ID, upgrade_to_1

    path = tmp_path / "v1.db"
    db = sqlite3.connect(path)
    db.executescript(
        "BEGIN;" + upgrade_to_1() + f";PRAGMA application_id = {APPLICATION_ID};"
        "INSERT INTO meta VALUES ('schema_version', '1');"
        "INSERT INTO campaigns(name, created_at) VALUES ('old', 'then');"
        "INSERT INTO findings(campaign_id, kind, severity, message, created_at) "
        "VALUES (1, 'k', 'info', 'kept', 'then');COMMIT;"
    )
    db.close()
    with Store(path) as store:
        assert store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[
            0
        ] == str(SCHEMA_VERSION)
        old = store.findings("old")
        assert [(f["message"], f["source"]) for f in old] == [("kept", None)]
        store.add_findings(
            [{"kind": "oom", "severity": "error", "message": "m", "evidence": {"lines": [3]}}],
            campaign="old",
            source="server.log",
        )
        aid = store.add_analysis("profile", "t.json.gz", {"steps": 16}, campaign="old")
        store.add_analysis("profile", "other", {"steps": 1})  # no campaign
        got = store.findings("old")
        assert got[-1]["evidence"] == {"lines": [3]} and got[-1]["source"] == "server.log"
        a = store.analyses("profile", campaign="old")
        assert [(x["id"], x["name"], x["data"]) for x in a] == [(aid, "t.json.gz", {"steps": 16})]
        assert len(store.analyses("profile")) == 2 and store.analyses("tune") == []


def test_trust_stop_and_dropped_round_trip(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        rid = _add(
            store,
            trust="untrusted",
            trust_reasons=[{"reason": "client-lag", "message": "m", "fix": "f"}],
            stop={"reason": "precision", "half_width": {"tpot_ms": 0.03}},
        )
        store.db.execute("UPDATE requests SET dropped='drain' WHERE run_id=? AND idx=0", (rid,))
        run = store.runs(campaign="c")[0]
        assert store.requests(rid)[0].dropped == "drain" and not store.requests(rid)[0].counted
    assert run.trust == "untrusted" and run.trust_reasons[0]["reason"] == "client-lag"
    assert run.stop == {"reason": "precision", "half_width": {"tpot_ms": 0.03}}


def test_v2_runs_are_assessed_when_read(tmp_path: Path) -> None:
    """Runs stored before schema 3 carry no trust: a starved client's run reads as untrusted."""
    from inferlab.store.schema import APPLICATION_ID, upgrade_to_1, upgrade_to_2

    path = tmp_path / "v2.db"
    db = sqlite3.connect(path)
    db.executescript(
        "BEGIN;" + upgrade_to_1() + ";" + upgrade_to_2() + f";PRAGMA application_id = "
        f"{APPLICATION_ID};INSERT INTO meta VALUES ('schema_version', '2');"
        "INSERT INTO campaigns(name, created_at) VALUES ('old', 'then');"
        "INSERT INTO configs(campaign_id, name, argv_json, env_json, extra_json, hash, "
        "created_at) VALUES (1, 'b', '[]', '{}', '{}', 'h', 'then');"
        "INSERT INTO runs(campaign_id, config_id, source, definitions, label, workload_json, "
        "workload_hash, summary_json, client_lag_json) VALUES (1, 1, 'inferlab bench', 'd', "
        """'C=1', '{}', 'w', '{"tpot_ms": {"p50": 0.0}}', '{"p99": 14.0}');"""
        "INSERT INTO runs(campaign_id, config_id, source, definitions, label, workload_json, "
        "workload_hash, summary_json) VALUES (1, 1, 'import:vllm', 'd', 'C=1', '{}', 'w', '{}');"
        "COMMIT;"
    )
    db.close()
    with Store(path) as store:
        measured, imported = store.runs(campaign="old")
    assert measured.trust == "untrusted"
    assert [r["reason"] for r in measured.trust_reasons] == ["client-lag", "tpot-zero"]
    assert imported.trust == "trusted" and imported.stop is None


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    Store(tmp_path / "x.db").close()
    db = sqlite3.connect(tmp_path / "x.db")
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match=r"x\.db: schema version 99 .*upgrade inferlab"):
        Store(tmp_path / "x.db")


def test_foreign_and_corrupt_files(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="other.db: a SQLite database, but not inferlab's"):
        Store(foreign)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all " * 100)
    with pytest.raises(StoreError, match="junk.db: not a readable SQLite database"):
        Store(junk)


def test_locked_database_is_a_clear_error(tmp_path: Path) -> None:
    Store(tmp_path / "x.db").close()
    holder = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with (
            Store(tmp_path / "x.db", timeout_s=0.2) as store,
            pytest.raises(StoreError, match="x.db: database is locked"),
        ):
            _add(store)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        _add(store)
        cfg = store.db.execute("SELECT argv_json, env_json FROM configs").fetchone()
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert json.loads(cfg[0]) == ["--api-key", "<redacted>", "--tp", "2"]
    assert json.loads(cfg[1]) == {"HF_TOKEN": "<redacted>", "NCCL_PROTO": "LL"}
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"SECRET" not in blob


def test_a_changed_config_gets_a_new_row(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store, store.transaction():
        cid = store.campaign_id("c")
        a = store.config_id(cid, "base", engine="vllm", model="m", argv=["--tp", "2"])
        b = store.config_id(cid, "base", engine="vllm", model="m", argv=["--tp", "2"])
        c = store.config_id(cid, "base", engine="vllm", model="m", argv=["--tp", "4"])
    assert a == b != c


def test_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        with pytest.raises(RuntimeError), store.transaction():
            store.campaign_id("half")
            raise RuntimeError("boom")
        assert store.db.execute("SELECT count(*) FROM campaigns").fetchone()[0] == 0


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


def test_sigkill_mid_sweep_loses_only_the_unfinished_point(tmp_path: Path) -> None:
    db = tmp_path / "kill.db"
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    n = 6
    with start_sim("--ttft-ms", "5", "--itl-ms", "25") as sim:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inferlab.cli.main",
                "bench",
                "--url",
                sim.url,
                "-c",
                "1,2,3,4,5,6",
                "--requests",
                str(n),
                "--input-tokens",
                "8",
                "--output-tokens",
                "12",
                "--engine",
                "sim",
                "--tokenizer",
                str(tok),
                "--db",
                str(db),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        done = 0
        while time.monotonic() < deadline and done < 2:
            time.sleep(0.2)
            if db.exists():
                try:
                    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1)
                    done = c.execute("SELECT count(*) FROM runs").fetchone()[0]
                    c.close()
                except sqlite3.Error:
                    pass
        time.sleep(0.3)  # well inside the next point
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert done >= 2
    with Store(db) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = store.runs()
        assert 2 <= len(runs) < 6
        for r in runs:  # every stored point is whole
            assert r.n_requests == n and r.summary["ok"] == n
            assert len(store.requests(r.id)) == n


def test_v2_runs_become_measurements_and_profiled_passes_stay_apart(tmp_path: Path) -> None:
    """Schema 4: an existing run is a measurement; a profiled pass is stored but never listed
    by default (so no verdict, resume accounting or sweep table reads it)."""
    from inferlab.store.schema import APPLICATION_ID, upgrade_to_1, upgrade_to_2

    path = tmp_path / "v2.db"
    db = sqlite3.connect(path)
    db.executescript(
        "BEGIN;" + upgrade_to_1() + ";" + upgrade_to_2() + f";PRAGMA application_id = "
        f"{APPLICATION_ID};INSERT INTO meta VALUES ('schema_version', '2');"
        "INSERT INTO campaigns(name, created_at) VALUES ('c', 'then');"
        "INSERT INTO configs(campaign_id, name, argv_json, env_json, extra_json, hash, "
        "created_at) VALUES (1, 'base', '[]', '{}', '{}', 'h', 'then');"
        "INSERT INTO runs(campaign_id, config_id, source, definitions, label, workload_json, "
        "workload_hash, summary_json) VALUES (1, 1, 'inferlab bench', 'inferlab/1', 'C=1', "
        "'{}', 'w', '{}');COMMIT;"
    )
    db.close()
    with Store(path) as store:
        (old,) = (r.id for r in store.runs(campaign="c"))
        prof = _add(store, "C=1", purpose="profiled")
        assert [r.id for r in store.runs(campaign="c")] == [old]
        both = store.runs(campaign="c", purpose=None)
        assert [(r.id, r.purpose) for r in both] == [(old, "measure"), (prof, "profiled")]
        assert len(store.requests(prof)) == len(_records())  # the raw samples are kept
