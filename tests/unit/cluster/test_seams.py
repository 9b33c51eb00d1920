"""The driver owns its runs: ``shared`` sits below ``task`` and ``cluster/`` has no import circle
(read from the source with ``ast``, ``TYPE_CHECKING`` imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import inferlab.cluster

CLUSTER = Path(inferlab.cluster.__file__).parent


def _imports() -> dict[str, set[str]]:
    """Each module of ``inferlab.cluster`` → the modules of it that it imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted(CLUSTER.glob("*.py")):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith("inferlab.cluster."):
                    deps.add(node.module.split(".")[2])
                elif node.module == "inferlab.cluster":
                    deps |= {a.name for a in node.names}
        graph[path.stem] = deps
    return graph


def test_shared_imports_no_cluster_module() -> None:
    assert _imports()["shared"] == set()


def test_no_import_circle() -> None:
    graph = _imports()

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for dep in graph.get(todo.pop(), set()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    assert sorted(m for m in graph if m in reach(m)) == []
