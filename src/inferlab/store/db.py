"""The SQLite store: every raw sample, committed one load point at a time.

Raw samples are the record: per-request send/end times, every token event's arrival (packed
int64 offsets from send) and token count. Summaries are stored next to them for listing, and can
be recomputed from the requests at any time.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from inferlab.errors import StoreError
from inferlab.records import RequestRecord
from inferlab.secrets import scrub_argv, scrub_env
from inferlab.store.annotations import Annotations
from inferlab.store.configs import Configs
from inferlab.store.jsoncols import dumps as _dumps
from inferlab.store.jsoncols import now as _now
from inferlab.store.requests import INSERT_REQUEST, SELECT_REQUESTS, pack_request, unpack_request
from inferlab.store.rows import RunRow, run_row
from inferlab.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

__all__ = ["DEFAULT_DB", "RunRow", "Store", "db_path", "workload_hash"]

DEFAULT_DB = "inferlab.db"


def db_path(arg: str | Path | None = None) -> Path:
    """``--db PATH``, else ``$INFERLAB_DB``, else ``./inferlab.db``."""
    return Path(arg or os.environ.get("INFERLAB_DB") or DEFAULT_DB)


def workload_hash(workload: Mapping[str, Any]) -> str:
    """Hash of the prompt and output length distribution (what makes workloads comparable)."""
    return hashlib.sha256(_dumps(dict(workload)).encode()).hexdigest()[:16]


class Store(Configs, Annotations):
    """An open inferlab database. Use as a context manager; one writer at a time."""

    db: sqlite3.Connection

    def __init__(self, path: str | Path, *, timeout_s: float = 5.0) -> None:
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None)
            self.db.execute("PRAGMA foreign_keys = ON")
            mode = self.db.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode is None:
                raise StoreError(f"{self.path}: could not set WAL mode")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(self._explain(exc)) from None

    def _explain(self, exc: sqlite3.Error) -> str:
        msg = str(exc)
        if "locked" in msg or "busy" in msg:
            return f"{self.path}: database is locked by another process (retry when it is done)"
        if "not a database" in msg or "malformed" in msg or "corrupt" in msg:
            return f"{self.path}: not a readable SQLite database ({msg})"
        return f"{self.path}: {msg}"

    def _migrate(self) -> None:
        db = self.db
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        if tables and (app_id != APPLICATION_ID or "meta" not in tables):
            raise StoreError(
                f"{self.path}: a SQLite database, but not inferlab's (refusing to touch it)"
            )
        version = 0
        if tables:
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {version} is newer than this inferlab "
                f"understands ({SCHEMA_VERSION}): upgrade inferlab"
            )
        for v in range(version + 1, SCHEMA_VERSION + 1):
            sql = MIGRATIONS[v]()
            try:
                db.executescript(
                    "BEGIN IMMEDIATE;\n" + sql + ";\n"
                    f"PRAGMA application_id = {APPLICATION_ID};\n"
                    "INSERT OR REPLACE INTO meta(key, value) "
                    f"VALUES ('schema_version', '{v}');\nCOMMIT;"
                )
            except sqlite3.Error:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic unit of work: all of it is stored, or none of it."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(self._explain(exc)) from None
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            try:
                self.db.execute("COMMIT")
            except sqlite3.Error as exc:
                self.db.execute("ROLLBACK")
                raise StoreError(self._explain(exc)) from None

    # -- identities ------------------------------------------------------------------------
    def campaign_id(self, name: str, description: str | None = None) -> int:
        row = self.db.execute("SELECT id FROM campaigns WHERE name=?", (name,)).fetchone()
        if row:
            return int(row[0])
        cur = self.db.execute(
            "INSERT INTO campaigns(name, created_at, description) VALUES (?,?,?)",
            (name, _now(), description),
        )
        return int(cur.lastrowid or 0)

    def config_id(
        self,
        campaign_id: int,
        name: str,
        *,
        engine: str | None,
        model: str | None,
        argv: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """The config row for this exact content (a changed config gets a new row)."""
        argv_s = scrub_argv(list(argv))
        env_s = scrub_env(dict(env or {}))
        extra_d = dict(extra or {})
        h = hashlib.sha256(
            _dumps(
                {"engine": engine, "model": model, "argv": argv_s, "env": env_s, "extra": extra_d}
            ).encode()
        ).hexdigest()[:16]
        row = self.db.execute(
            "SELECT id FROM configs WHERE campaign_id=? AND name=? AND hash=?",
            (campaign_id, name, h),
        ).fetchone()
        if row:
            return int(row[0])
        cur = self.db.execute(
            "INSERT INTO configs(campaign_id, name, engine, model, argv_json, env_json, "
            "extra_json, hash, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                campaign_id,
                name,
                engine,
                model,
                _dumps(argv_s),
                _dumps(env_s),
                _dumps(extra_d),
                h,
                _now(),
            ),
        )
        return int(cur.lastrowid or 0)

    def environment_id(self, snap: Mapping[str, Any]) -> int:
        cur = self.db.execute(
            "INSERT INTO environments(inferlab_version, host, cpu, gpu_name, gpu_count, "
            "gpu_memory_mib, driver, engine_name, engine_version, snapshot_json, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (*(snap.get(k) for k in _ENV_COLUMNS.split()), _dumps(dict(snap)), _now()),
        )
        return int(cur.lastrowid or 0)

    # -- runs --------------------------------------------------------------------------------
    def add_run(
        self,
        *,
        campaign_id: int,
        config_id: int,
        environment_id: int | None,
        source: str,
        definitions: str,
        metrics_version: int | None,
        label: str,
        concurrency: int | None,
        rate: float | None,
        max_concurrency: int | None = None,
        trial: int = 0,
        model: str | None,
        workload: Mapping[str, Any],
        records: Sequence[RequestRecord],
        summary: Mapping[str, Any],
        started_at: str | None = None,
        ended_at: str | None = None,
        workers: int | None = None,
        client_lag: Mapping[str, Any] | None = None,
        warnings: Sequence[Mapping[str, Any]] = (),
        interrupted: bool = False,
        rejected: str | None = None,
        notes: Sequence[str] = (),
        purpose: str = "measure",
        trust: str | None = None,
        trust_reasons: Sequence[Mapping[str, Any]] = (),
        stop: Mapping[str, Any] | None = None,
    ) -> int:
        """Insert one load point and all its requests. Call inside ``transaction()``.
        ``purpose`` "profiled": a pass replayed while capturing a profile (never a verdict).
        ``trust`` None: not assessed (imports); it is assessed from the summary when read."""
        args = locals()
        row = {k: args[k] for k in _RUN_COLUMNS}
        row.update(
            _run_json(
                records,
                workload=workload,
                summary=summary,
                client_lag=client_lag,
                warnings=warnings,
                notes=notes,
                trust_reasons=trust_reasons,
                stop=stop,
            )
        )
        row["interrupted"] = int(interrupted)
        sql = f"INSERT INTO runs({', '.join(row)}) VALUES ({','.join('?' * len(row))})"
        run_id = int(self.db.execute(sql, tuple(row.values())).lastrowid or 0)
        self.db.executemany(
            INSERT_REQUEST, (pack_request(run_id, i, r) for i, r in enumerate(records))
        )
        return run_id

    def add_server_metrics(
        self, run_id: int, samples: Sequence[tuple[int, str, dict[str, str], float]]
    ) -> None:
        self.db.executemany(
            "INSERT INTO server_metrics(run_id, t_ns, name, labels_json, value) VALUES (?,?,?,?,?)",
            ((run_id, t, n, _dumps(lb), v) for t, n, lb, v in samples),
        )

    # -- reading -------------------------------------------------------------------------------
    def runs(
        self,
        campaign: str | None = None,
        run_ids: Sequence[int] | None = None,
        config: str | None = None,
        purpose: str | None = "measure",
    ) -> list[RunRow]:
        """Stored runs, oldest first; by default only measurements (``purpose=None``: all,
        the profiled passes included)."""
        q = (
            "SELECT r.id, c.name, g.name, g.hash, r.source, r.definitions, r.label, "
            "r.concurrency, r.rate, r.trial, r.model, r.workload_hash, r.started_at, "
            "r.interrupted, r.summary_json, e.snapshot_json, r.metrics_version, "
            "(SELECT count(*) FROM requests q WHERE q.run_id = r.id), r.purpose, "
            "r.trust, r.trust_json, r.stop_json, r.client_lag_json "
            "FROM runs r JOIN campaigns c ON c.id = r.campaign_id "
            "JOIN configs g ON g.id = r.config_id "
            "LEFT JOIN environments e ON e.id = r.environment_id WHERE 1=1"
        )
        args: list[Any] = []
        if campaign is not None:
            q += " AND c.name = ?"
            args.append(campaign)
        if config is not None:
            q += " AND g.name = ?"
            args.append(config)
        if run_ids is not None:
            q += f" AND r.id IN ({','.join('?' * len(run_ids))})"
            args.extend(run_ids)
        if purpose is not None:
            q += " AND r.purpose = ?"
            args.append(purpose)
        q += " ORDER BY r.id"
        try:
            rows = self.db.execute(q, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(self._explain(exc)) from None
        return [run_row(r) for r in rows]

    def requests(self, run_id: int) -> list[RequestRecord]:
        rows = self.db.execute(SELECT_REQUESTS, (run_id,)).fetchall()
        return [unpack_request(r) for r in rows]

    def run_meta(self, run_id: int) -> dict[str, Any]:
        """Every column of a run (JSON columns decoded), for export and comparability checks."""
        cur = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,))
        row = cur.fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {run_id}")
        names = [d[0] for d in cur.description]
        out = dict(zip(names, row))
        for k in list(out):
            if k.endswith("_json") and out[k] is not None:
                out[k[: -len("_json")]] = json.loads(out.pop(k))
        return out


#: the environments columns read from a snapshot, in the table's order
_ENV_COLUMNS = "inferlab_version host cpu gpu_name gpu_count gpu_memory_mib driver engine_name"
_ENV_COLUMNS += " engine_version"

#: the runs columns stored as given to ``add_run``
_RUN_COLUMNS = (
    "campaign_id", "config_id", "environment_id", "source", "definitions", "metrics_version",
    "label", "concurrency", "rate", "max_concurrency", "trial", "model", "started_at",
    "ended_at", "workers", "rejected", "purpose", "trust",
)  # fmt: skip


def _run_json(
    records: Sequence[RequestRecord],
    *,
    workload: Mapping[str, Any],
    summary: Mapping[str, Any],
    client_lag: Mapping[str, Any] | None,
    warnings: Sequence[Mapping[str, Any]],
    notes: Sequence[str],
    trust_reasons: Sequence[Mapping[str, Any]],
    stop: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The runs columns derived from ``add_run``'s arguments: the JSON ones, the workload's
    hash, and the first send / last end (ns) of the records."""
    sends = [r.send_ns for r in records if r.send_ns]
    ends = [r.end_ns for r in records if r.end_ns]
    return {
        "workload_json": _dumps(dict(workload)),
        "workload_hash": workload_hash(workload),
        "start_ns": min(sends) if sends else None,
        "end_ns": max(ends) if ends else None,
        "client_lag_json": _dumps(dict(client_lag)) if client_lag is not None else None,
        "warnings_json": _dumps(list(warnings)),
        "summary_json": _dumps(dict(summary)),
        "notes_json": _dumps(list(notes)),
        "trust_json": _dumps([dict(x) for x in trust_reasons]),
        "stop_json": _dumps(dict(stop)) if stop is not None else None,
    }
