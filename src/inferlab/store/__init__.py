"""The record: a versioned SQLite store of every raw sample (``inferlab.store.db``) and
importers of other tools' results (``inferlab.store.imports``)."""

from inferlab.store.db import DEFAULT_DB, RunRow, Store, db_path, workload_hash
from inferlab.store.schema import SCHEMA_VERSION

__all__ = ["DEFAULT_DB", "SCHEMA_VERSION", "RunRow", "Store", "db_path", "workload_hash"]
