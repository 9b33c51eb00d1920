"""The store owns its queries (issue 27): no module outside ``inferlab/store/`` holds an SQL
statement, calls ``.execute`` (or ``executemany``/``executescript``) or imports ``sqlite3``;
what another package needs from the database is a ``Store`` method."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import inferlab

SRC = Path(inferlab.__file__).parent

#: module (relative to ``inferlab/``) → why it may hold SQL outside the store
ALLOW = {
    # an Nsight Systems export is its own SQLite file (nsys's schema), not inferlab's store
    "profile/nsys.py": "reads an nsys SQLite export",
    # one of the fixed greedy-output prompts asks the model to complete an SQL query
    "verify/checks.py": "a prompt's text, never executed",
}

_SQL = re.compile(
    r"\b(SELECT\b[\s\S]*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(TABLE|INDEX)|DROP\s+TABLE|ALTER\s+TABLE|PRAGMA\s+\w+)\b"
)
_EXECUTE = {"execute", "executemany", "executescript"}


def _breaches(tree: ast.AST) -> list[str]:
    """What in one module's syntax tree talks to a database: ``line: why``."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _SQL.search(node.value):
                out.append(f"{node.lineno}: SQL {node.value[:50]!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _EXECUTE:
                out.append(f"{node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            if "sqlite3" in names:
                out.append(f"{node.lineno}: imports sqlite3")
    return out


def _scan() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for p in sorted(SRC.rglob("*.py")):
        rel = p.relative_to(SRC).as_posix()
        if rel.startswith("store/"):
            continue
        hits = _breaches(ast.parse(p.read_text(encoding="utf-8")))
        if hits:
            found[rel] = hits
    return found


def test_no_sql_outside_the_store() -> None:
    found = {k: v for k, v in _scan().items() if k not in ALLOW}
    assert found == {}, "queries outside inferlab/store/ (make them Store methods): " + "; ".join(
        f"{k} {', '.join(v)}" for k, v in found.items()
    )


def test_the_allow_list_is_not_stale() -> None:
    assert set(ALLOW) <= set(_scan()), "an allowed module no longer holds SQL: drop it from ALLOW"


def test_the_scan_sees_a_query() -> None:
    code = 'store.db.execute("SELECT id FROM configs WHERE name=?", (n,))'
    assert len(_breaches(ast.parse(code))) == 2
    assert _breaches(ast.parse('say("DELETE /truth clears the ground truth")')) == []
