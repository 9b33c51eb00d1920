"""Strict, typed access to one JSON object of an imported file: every error names the file
(and line for JSONL) and what was expected."""

from __future__ import annotations

import math
from typing import Any

from inferlab.errors import ConfigError
from inferlab.store.imports.content import Content

__all__ = ["Source", "kind_of", "where"]


def where(c: Content, line: int | None) -> str:
    return f"{c.path}:{line}" if line is not None else str(c.path)


class Source:
    """Typed, strict access to one JSON object of a file: every error names file (and line)."""

    def __init__(self, content: Content, line: int | None, obj: Any, what: str) -> None:
        self.content = content
        self.line = line
        self.where = where(content, line)
        if not isinstance(obj, dict):
            raise ConfigError(f"{self.where}: expected a JSON object ({what}), got {kind_of(obj)}")
        self.obj: dict[str, Any] = obj

    def fail(self, reason: str) -> ConfigError:
        return ConfigError(f"{self.where}: {reason}")

    def _get(self, key: str, required: bool, expected: str | None = None) -> Any:
        """The value of ``key`` (None when absent); ``required``: absent is an error, and so
        is null when ``expected`` (what it should be, in words) is given."""
        if key not in self.obj:
            if required:
                raise self.fail(f"missing required field {key!r}")
            return None
        v = self.obj[key]
        if v is None and required and expected is not None:
            raise self.fail(f"field {key!r} is null, expected {expected}")
        return v

    def num(self, key: str, *, required: bool = False, null: bool = True) -> float | None:
        v = self._get(key, required)
        if v is None:
            if key in self.obj and not null:
                raise self.fail(f"field {key!r} is null, expected a number")
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(f"field {key!r} must be a number, got {kind_of(v)}")
        return float(v)

    def req_num(self, key: str) -> float:
        v = self.num(key, required=True, null=False)
        assert v is not None
        return v

    def int_(self, key: str, *, required: bool = False) -> int | None:
        v = self._get(key, required, "an integer")
        if v is None:
            return None
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if not isinstance(v, float) or not v.is_integer():
            raise self.fail(f"field {key!r} must be an integer, got {kind_of(v)} {v!r}")
        return int(v)

    def req_int(self, key: str) -> int:
        v = self.int_(key, required=True)
        assert v is not None
        return v

    def str_(self, key: str, *, required: bool = False) -> str | None:
        v = self._get(key, required, "a string")
        if v is None:
            return None
        if not isinstance(v, str):
            raise self.fail(f"field {key!r} must be a string, got {kind_of(v)}")
        return v

    def obj_(self, key: str, *, required: bool = False) -> Source | None:
        v = self._get(key, required, "an object")
        if v is None:
            return None
        return self.sub(v, key)

    def req_obj(self, key: str) -> Source:
        v = self.obj_(key, required=True)
        assert v is not None
        return v

    def sub(self, v: Any, what: str) -> Source:
        s = Source.__new__(Source)
        s.content, s.line = self.content, self.line
        s.where = f"{self.where} ({what})"
        if not isinstance(v, dict):
            raise ConfigError(f"{s.where}: expected a JSON object, got {kind_of(v)}")
        s.obj = v
        return s

    def list_(self, key: str, *, required: bool = False) -> list[Any] | None:
        v = self._get(key, required, "a list")
        if v is None:
            return None
        if not isinstance(v, list):
            raise self.fail(f"field {key!r} must be a list, got {kind_of(v)}")
        return v

    def num_list(self, key: str, n: int | None = None) -> list[float] | None:
        """A list of numbers (None entries refused); ``n``: required length."""
        v = self.list_(key)
        if v is None:
            return None
        out = [self._elem_num(key, i, x) for i, x in enumerate(v)]
        if n is not None and len(out) != n:
            raise self.fail(f"field {key!r} has {len(out)} entries, expected {n}")
        return out

    def int_list(self, key: str, n: int | None = None) -> list[int] | None:
        v = self.num_list(key, n)
        if v is None:
            return None
        for i, x in enumerate(v):
            if x != int(x):
                raise self.fail(f"{key}[{i}] must be an integer, got {x!r}")
        return [int(x) for x in v]

    def str_list(self, key: str, n: int | None = None) -> list[str] | None:
        v = self.list_(key)
        if v is None:
            return None
        for i, x in enumerate(v):
            if x is not None and not isinstance(x, str):
                raise self.fail(f"{key}[{i}] must be a string, got {kind_of(x)}")
        if n is not None and len(v) != n:
            raise self.fail(f"field {key!r} has {len(v)} entries, expected {n}")
        return ["" if x is None else x for x in v]

    def nested_num_list(self, key: str, n: int | None = None) -> list[list[float]] | None:
        v = self.list_(key)
        if v is None:
            return None
        out: list[list[float]] = []
        for i, row in enumerate(v):
            if not isinstance(row, list):
                raise self.fail(f"{key}[{i}] must be a list, got {kind_of(row)}")
            out.append([self._elem_num(f"{key}[{i}]", j, x) for j, x in enumerate(row)])
        if n is not None and len(out) != n:
            raise self.fail(f"field {key!r} has {len(out)} entries, expected {n}")
        return out

    def _elem_num(self, key: str, i: int, x: Any) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise self.fail(f"{key}[{i}] must be a number, got {kind_of(x)}")
        if not math.isfinite(x):
            raise self.fail(f"{key}[{i}] is not finite ({x!r})")
        return float(x)


def kind_of(v: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(v), type(v).__name__)
