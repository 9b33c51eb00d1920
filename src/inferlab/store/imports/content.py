"""An imported file read strictly as one JSON document or as JSON Lines (``ConfigError``
naming the file, and line, when it is neither)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.errors import ConfigError

__all__ = ["Content", "load_content"]


@dataclass(frozen=True)
class Content:
    """A file read as JSON (one document, ``line`` None) or JSONL (one object per line)."""

    path: Path
    docs: list[tuple[int | None, Any]]  # (1-based line for JSONL, parsed value)
    jsonl: bool


def load_content(path: Path) -> Content:
    """Read ``path`` as one JSON document, else as JSONL; ConfigError when it is neither."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a benchmark result file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e.strerror})") from None
    if not text.strip():
        raise ConfigError(f"{path}: empty file, expected a JSON or JSONL benchmark result")
    try:
        doc = json.loads(text)
        one_line = text.strip().count("\n") == 0
        return Content(path, [(1 if one_line else None, doc)], jsonl=False)
    except json.JSONDecodeError as whole:
        lines = [(i, s) for i, s in enumerate(text.splitlines(), 1) if s.strip()]
        if len(lines) < 2:
            raise ConfigError(
                f"{path}: not valid JSON ({whole.msg} at line {whole.lineno} column {whole.colno})"
            ) from None
        docs: list[tuple[int | None, Any]] = []
        for no, s in lines:
            try:
                docs.append((no, json.loads(s)))
            except json.JSONDecodeError as e:
                if not docs:
                    # not JSONL either: report the whole-document error
                    raise ConfigError(
                        f"{path}: not valid JSON ({whole.msg} at line {whole.lineno} "
                        f"column {whole.colno}) nor JSON Lines (line {no}: {e.msg})"
                    ) from None
                raise ConfigError(
                    f"{path}:{no}: not a valid JSON line ({e.msg} at column {e.colno}); "
                    "the file is damaged or truncated"
                ) from None
        return Content(path, docs, jsonl=True)
