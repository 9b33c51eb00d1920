"""The SQLite store: every raw sample, committed one load point at a time.

Raw samples are the record: per-request send/end times, every token event's arrival (packed
int64 offsets from send) and token count. Summaries are stored next to them for listing, and can
be recomputed from the requests at any time. A ``Store`` is its connection and its parts:
``runs``, ``configs``, ``verifications``, ``analyses`` and ``findings``, each called to list its
rows (``store.runs(campaign=...)``) and with its own writers (``store.runs.add(...)``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from inferlab.errors import StoreError
from inferlab.store.analyses import Analyses, Findings
from inferlab.store.configs import Configs
from inferlab.store.jsoncols import explain
from inferlab.store.rows import RunRow
from inferlab.store.runs import Runs, workload_hash
from inferlab.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from inferlab.store.verifications import Verifications

__all__ = ["DEFAULT_DB", "RunRow", "Store", "db_path", "workload_hash"]

DEFAULT_DB = "inferlab.db"


def db_path(arg: str | Path | None = None) -> Path:
    """``--db PATH``, else ``$INFERLAB_DB``, else ``./inferlab.db``."""
    return Path(arg or os.environ.get("INFERLAB_DB") or DEFAULT_DB)


class Store:
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
            raise StoreError(explain(self.path, exc)) from None
        self.configs = Configs(self.db)
        self.runs = Runs(self.db, self.path)
        self.verifications = Verifications(self.db, str(self.path))
        self.analyses = Analyses(self.db, self.configs, str(self.path))
        self.findings = Findings(self.db, self.configs)
        # the writers and readers called from dozens of places, by their old names
        self.campaign_id = self.configs.campaign_id
        self.config_id = self.configs.config_id
        self.requests = self.runs.requests
        self.add_verification = self.verifications.add
        self.latest_verification = self.verifications.latest
        self.add_analysis = self.analyses.add

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
            raise StoreError(explain(self.path, exc)) from None
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
                raise StoreError(explain(self.path, exc)) from None
