"""How the store writes a JSON column (sorted keys, compact) and a timestamp (local, ISO 8601)."""

from __future__ import annotations

import json
import time
from typing import Any

__all__ = ["dumps", "now"]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
