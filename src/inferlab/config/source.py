"""A config file's text, before its model sees it: parsed (TOML; YAML by suffix) with
``file:line`` syntax errors, ``${NAME}`` expanded from the environment, and a field path such
as ``("config", 1, "set")`` located to its line, so that every error names the line."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from inferlab.config.tomlcompat import tomllib
from inferlab.errors import ConfigError

__all__ = ["expand_env", "locate", "parse_text"]


def parse_text(path: Path, text: str) -> dict[str, Any]:
    """A TOML file's text (YAML for ``.yaml``/``.yml``) as its top-level table; a syntax error
    names ``path:line``."""
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
            raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            where = f"{path}:{m.group(1)}" if m else str(path)
            raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table at the top level")
    return data


def locate(text: str, loc: tuple[int | str, ...]) -> int | None:
    """Best line number (1-based) for a field path such as ``("config", 1, "set")`` in TOML or
    YAML text: the table or list item first, then the key inside it."""
    lines = text.splitlines()
    if not lines:
        return None
    lo, hi = 0, len(lines)

    def first(pattern: str, a: int, b: int) -> int | None:
        rx = re.compile(pattern)
        return next((j for j in range(a, b) if rx.match(lines[j])), None)

    def next_header(a: int, b: int) -> int:
        return first(r"^\s*\[", a, b) or b

    i = 0
    while i < len(loc):
        part = loc[i]
        nxt = loc[i + 1] if i + 1 < len(loc) else None
        idx = nxt if isinstance(nxt, int) else None
        if not isinstance(part, str):
            i += 1
            continue
        name = re.escape(part)
        heads = [  # [[name]], or [[parent.name]] inside the parent's table
            j for j in range(lo, hi) if re.match(rf"^\s*\[\[\s*([\w-]+\.)*{name}\s*\]\]", lines[j])
        ]
        if heads:  # TOML array of tables
            k = heads[min(idx or 0, len(heads) - 1)]
            lo, hi = k, next_header(k + 1, hi)
            i += 2 if idx is not None else 1
            continue
        tbl = first(rf"^\s*\[\s*{name}\s*\]", lo, hi)
        if tbl is not None:  # TOML table, with its [name.sub] / [[name.sub]] tables
            sub = re.compile(rf"^\s*\[\[?\s*{name}\.")
            end = next_header(tbl + 1, hi)
            while end < hi and sub.match(lines[end]):
                end = next_header(end + 1, hi)
            lo, hi = tbl, end
            i += 1
            continue
        key = first(rf"^\s*(-\s*)?[\"']?{name}[\"']?\s*[=:]", lo, hi)
        if key is None:
            return lo + 1
        lo = key
        if idx is not None:  # a YAML list under the key
            items = [j for j in range(key + 1, hi) if re.match(r"^\s*-\s", lines[j])]
            if items:
                j = items[min(idx, len(items) - 1)]
                after = [x for x in items if x > j]
                lo, hi = j, (after[0] if after else hi)
            i += 2
            continue
        i += 1
    return lo + 1


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: Any, missing: list[str]) -> Any:
    """``${NAME}`` in strings → the environment variable (outside ``[verify]``, whose prompts
    are text); unset names are collected in ``missing``."""
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            v = os.environ.get(m.group(1))
            if v is None:
                missing.append(m.group(1))
                return m.group(0)
            return v

        return _VAR.sub(sub, value)
    if isinstance(value, list):
        return [expand_env(v, missing) for v in value]
    if isinstance(value, dict):
        return {k: expand_env(v, missing) for k, v in value.items()}
    return value
