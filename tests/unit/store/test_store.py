"""The SQLite store: raw samples round-trip, versions, bad files, transactions, what a config
row keeps (levers, never secrets), the client host of each request."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from inferlab.errors import StoreError
from inferlab.store import SCHEMA_VERSION, Store
from inferlab.store.schema import MIGRATIONS
from support.records import rec
from support.stored import add_run, profile_body, sample_records


def test_raw_samples_round_trip_exactly(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        rid = add_run(store)
        got = store.requests(rid)
        runs = store.runs(campaign="c")
    assert got == sample_records()
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
        assert [(f.message, f.source) for f in old] == [("kept", None)]
        store.findings.add(
            [{"kind": "oom", "severity": "error", "message": "m", "evidence": {"lines": [3]}}],
            campaign="old",
            source="server.log",
        )
        body = profile_body(kernels=16)
        aid = store.add_analysis("profile", "t.json.gz", body, campaign="old")
        store.add_analysis("profile", "other", profile_body())  # no campaign
        got = store.findings("old")
        assert got[-1].evidence == {"lines": [3]} and got[-1].source == "server.log"
        a = store.analyses("profile", campaign="old")
        assert [(x.id, x.name, x.data.to_json()) for x in a] == [(aid, "t.json.gz", body)]
        assert len(store.analyses("profile")) == 2 and store.analyses("tune") == []


def test_trust_stop_and_dropped_round_trip(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        rid = add_run(
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
            add_run(store)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        add_run(store)
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
        prof = add_run(store, "C=1", purpose="profiled")
        assert [r.id for r in store.runs(campaign="c")] == [old]
        both = store.runs(campaign="c", purpose=None)
        assert [(r.id, r.purpose) for r in both] == [(old, "measure"), (prof, "profiled")]
        assert len(store.requests(prof)) == len(sample_records())  # the raw samples are kept


# --- the client host of each request (a cluster's load) is stored


def test_the_client_host_of_each_request_is_stored(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as st:
        with st.transaction():
            cid = st.campaign_id("c")
            gid = st.config_id(cid, "x", engine="sim", model="m")
            rid = st.runs.add(
                campaign_id=cid,
                config_id=gid,
                environment_id=None,
                source="inferlab bench",
                definitions="inferlab/1",
                metrics_version=1,
                label="C=2",
                concurrency=2,
                rate=None,
                model="m",
                workload={},
                records=[rec(0, 100, "h1:aa"), rec(1, 200)],
                summary={},
            )
        assert [r.client for r in st.requests(rid)] == ["h1:aa", None]


# --- the store keeps the levers and drops the secrets


def test_the_store_keeps_levers_and_drops_secrets(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store, store.transaction():
        cid = store.campaign_id("c")
        gid = store.config_id(
            cid,
            "B",
            engine="sglang",
            model="m",
            argv=["--speculative-num-draft-tokens", "2", "--api-key", "sk-xyz0123456789abcdefgh"],
            env={"HF_TOKEN": "hf_q", "NCCL_PROTO": "LL"},
        )
        row = store.db.execute("SELECT argv_json, env_json FROM configs WHERE id=?", (gid,))
        argv, env = row.fetchone()
    assert '"--speculative-num-draft-tokens","2"' in argv and "sk-xyz" not in argv
    assert "hf_q" not in env and '"NCCL_PROTO":"LL"' in env


def test_a_nan_metric_sample_is_left_out_and_the_run_is_kept(tmp_path: Path) -> None:
    """SGLang 0.5.17's /metrics on an H100 (2026-12-07) held a NaN sample: SQLite stores NaN as
    NULL, and ``server_metrics.value`` is NOT NULL, so the point's commit died with
    IntegrityError and the campaign with it."""
    from inferlab.engines.prometheus import parse_prometheus

    text = (
        "# TYPE sglang:gen_throughput gauge\n"
        'sglang:gen_throughput{model_name="m"} NaN\n'
        "# TYPE sglang:num_running_reqs gauge\n"
        'sglang:num_running_reqs{model_name="m"} 3.0\n'
    )
    samples = [(1, s.name, dict(s.labels), s.value) for s in parse_prometheus(text)]
    assert any(v != v for *_, v in samples)  # the parser keeps the NaN, as it should
    with Store(tmp_path / "x.db") as store:
        rid = add_run(store)
        with store.transaction():
            store.runs.add_server_metrics(rid, samples)
        rows = store.db.execute("SELECT name, value FROM server_metrics").fetchall()
    assert [tuple(r) for r in rows] == [("sglang:num_running_reqs", 3.0)]
