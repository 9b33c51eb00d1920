"""How the store writes a JSON column (sorted keys, compact) and a timestamp (local, ISO 8601),
and how it says what went wrong with its SQLite file."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

__all__ = ["dumps", "explain", "now"]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def explain(path: Path, exc: sqlite3.Error) -> str:
    """``PATH: database is locked ...``: an SQLite error said for the user."""
    msg = str(exc)
    if "locked" in msg or "busy" in msg:
        return f"{path}: database is locked by another process (retry when it is done)"
    if "not a database" in msg or "malformed" in msg or "corrupt" in msg:
        return f"{path}: not a readable SQLite database ({msg})"
    return f"{path}: {msg}"
