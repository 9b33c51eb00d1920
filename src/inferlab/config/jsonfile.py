"""Reading a user's JSON file with errors that name the option, the file and the position."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inferlab.errors import ConfigError

__all__ = ["read_json"]


def read_json(path: Path, what: str, *, after: str = "") -> Any:
    """The parsed content of ``path``. ``what`` names where it came from (``--model-config``,
    ``existing config file``); ``after`` is appended to the message (e.g. "; nothing was
    written"). Raises ``ConfigError`` for an unreadable file or invalid JSON (line, column)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path} ({exc.strerror}){after}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{what}: {path} is not UTF-8 text (byte {exc.start}: {exc.reason}){after}"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{what}: {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}){after}"
        ) from None
