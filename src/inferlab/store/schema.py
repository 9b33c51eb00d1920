"""The database schema and its migrations.

Format history (``meta.schema_version``):
  1 (inferlab 0.1.0) campaigns, configs, environments, runs, requests (token arrival times as
    packed int64 ns offsets from send), server_metrics, verifications, findings.
  2 (inferlab 0.2.0) ``findings.source`` (the file a finding was mined from) and ``analyses``:
    one row per stored analysis (``kind`` = 'profile', 'recon', 'tune', ...) with its JSON.
  3 (inferlab 0.2.0) ``requests.client``: the client host that measured a request (load from
    several hosts, ``inferlab bench --ray --clients N``); NULL for one host.
  4 ``runs.purpose``: 'measure' (default), or 'profiled' for the load replayed while a profile
    was captured (later also 'recheck': the baseline's recheck, ``store.recheck``); neither
    ever enters verdicts, resume accounting or sweep tables.
  5 trust and stopping: ``runs.trust`` ('trusted' | 'untrusted'; NULL for
    runs stored before, assessed when read), ``runs.trust_json`` (reasons with their fixes),
    ``runs.stop_json`` (why an adaptive or sequential point stopped, achieved half-widths,
    look), ``requests.dropped`` ('ramp-up' | 'drain': stored, left out of the statistics).
  6 multi-turn sessions: ``requests.session`` (which user's conversation) and
    ``requests.turn`` (its 0-based turn); NULL for a request of any other load pattern.

A database is upgraded on open by applying ``upgrade_to_N`` for every N above its version, in
one transaction. A database newer than ``SCHEMA_VERSION`` is refused ("upgrade inferlab").
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

SCHEMA_VERSION = 6
APPLICATION_ID = 0x1F3B_AB01  # PRAGMA application_id: marks the file as inferlab's


def upgrade_to_1() -> str:
    """SQL of version 1 (run inside the caller's transaction)."""
    return """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE campaigns (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            description TEXT
        );
        CREATE TABLE configs (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            name TEXT NOT NULL,
            engine TEXT,
            model TEXT,
            argv_json TEXT NOT NULL,          -- resolved argv, secrets removed
            env_json TEXT NOT NULL,           -- environment on top of the base, secrets removed
            extra_json TEXT NOT NULL,         -- anything else that defines it (url, ...)
            hash TEXT NOT NULL,               -- content hash of engine, model, argv, env, extra
            created_at TEXT NOT NULL,
            UNIQUE (campaign_id, name, hash)
        );
        CREATE TABLE environments (
            id INTEGER PRIMARY KEY,
            inferlab_version TEXT,
            host TEXT,
            cpu TEXT,
            gpu_name TEXT,
            gpu_count INTEGER,
            gpu_memory_mib INTEGER,
            driver TEXT,
            engine_name TEXT,
            engine_version TEXT,
            snapshot_json TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
            config_id INTEGER NOT NULL REFERENCES configs(id),
            environment_id INTEGER REFERENCES environments(id),
            source TEXT NOT NULL,             -- 'inferlab bench' or 'import:<tool>'
            definitions TEXT NOT NULL,        -- metric definitions the numbers follow
            metrics_version INTEGER,          -- inferlab's, when measured by inferlab
            label TEXT NOT NULL,              -- load point: C=8, rate=4/s
            concurrency INTEGER,
            rate REAL,
            max_concurrency INTEGER,
            trial INTEGER NOT NULL DEFAULT 0,
            model TEXT,
            workload_json TEXT NOT NULL,
            workload_hash TEXT NOT NULL,
            started_at TEXT,
            ended_at TEXT,
            start_ns INTEGER,
            end_ns INTEGER,
            workers INTEGER,
            client_lag_json TEXT,
            warnings_json TEXT NOT NULL DEFAULT '[]',
            summary_json TEXT NOT NULL,
            interrupted INTEGER NOT NULL DEFAULT 0,
            rejected TEXT,
            notes_json TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX runs_by_config ON runs(config_id, label, trial);
        CREATE TABLE requests (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            request_id TEXT,
            warmup INTEGER NOT NULL,
            scheduled_ns INTEGER,
            send_ns INTEGER NOT NULL,
            end_ns INTEGER NOT NULL,
            status INTEGER NOT NULL,
            error_kind TEXT,
            error_message TEXT,
            input_tokens INTEGER,
            requested_output_tokens INTEGER,
            usage_prompt_tokens INTEGER,
            usage_completion_tokens INTEGER,
            counted_output_tokens INTEGER,
            finish_reason TEXT,
            worker INTEGER NOT NULL DEFAULT 0,
            event_offsets BLOB NOT NULL,      -- int64 little-endian: event_ns - send_ns
            event_tokens BLOB NOT NULL,       -- int32 little-endian
            warnings_json TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (run_id, idx)
        );
        CREATE TABLE server_metrics (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            t_ns INTEGER NOT NULL,
            name TEXT NOT NULL,
            labels_json TEXT NOT NULL DEFAULT '{}',
            value REAL NOT NULL
        );
        CREATE INDEX server_metrics_by_run ON server_metrics(run_id, name);
        CREATE TABLE verifications (
            id INTEGER PRIMARY KEY,
            config_id INTEGER NOT NULL REFERENCES configs(id),
            run_id INTEGER REFERENCES runs(id),
            kind TEXT NOT NULL,
            passed INTEGER NOT NULL,
            detail_json TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE TABLE findings (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER REFERENCES campaigns(id),
            config_id INTEGER REFERENCES configs(id),
            kind TEXT NOT NULL,
            severity TEXT NOT NULL,
            message TEXT NOT NULL,
            evidence_json TEXT NOT NULL DEFAULT '{}',
            action TEXT,
            created_at TEXT NOT NULL
        );
        """


def upgrade_to_2() -> str:
    """SQL of version 2: where findings came from, and stored analyses."""
    return """
        ALTER TABLE findings ADD COLUMN source TEXT;
        CREATE INDEX findings_by_campaign ON findings(campaign_id, config_id);
        CREATE TABLE analyses (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER REFERENCES campaigns(id),
            config_id INTEGER REFERENCES configs(id),
            kind TEXT NOT NULL,               -- 'profile', 'recon', 'tune', ...
            name TEXT NOT NULL,               -- what was analyzed: a trace, a host, a shape
            data_json TEXT NOT NULL,          -- the analysis as its module's to_json() writes it
            created_at TEXT NOT NULL
        );
        CREATE INDEX analyses_by_campaign ON analyses(campaign_id, kind);
        """


def upgrade_to_3() -> str:
    """SQL of version 3: which client host measured each request."""
    return "ALTER TABLE requests ADD COLUMN client TEXT"


def upgrade_to_4() -> str:
    """SQL of version 4: why a run was taken (a measurement, or a profiled pass)."""
    return """
        ALTER TABLE runs ADD COLUMN purpose TEXT NOT NULL DEFAULT 'measure';
        """


def upgrade_to_5() -> str:
    """SQL of version 5: trust and stop records of runs, dropped requests."""
    return """
        ALTER TABLE runs ADD COLUMN trust TEXT;
        ALTER TABLE runs ADD COLUMN trust_json TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE runs ADD COLUMN stop_json TEXT;
        ALTER TABLE requests ADD COLUMN dropped TEXT;
        """


def upgrade_to_6() -> str:
    """SQL of version 6: a sessions point's conversation and turn of each request."""
    return """
        ALTER TABLE requests ADD COLUMN session INTEGER;
        ALTER TABLE requests ADD COLUMN turn INTEGER;
        """


MIGRATIONS: dict[int, Callable[[], str]] = {
    1: upgrade_to_1,
    2: upgrade_to_2,
    3: upgrade_to_3,
    4: upgrade_to_4,
    5: upgrade_to_5,
    6: upgrade_to_6,
}
