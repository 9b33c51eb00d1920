"""The reference engine's modules meet at public names: read from their source with ``ast``.

The request path (``http``, ``endpoints``, ``pacing``, ``inject``, ``batching``) talks to the
server through :mod:`inferlab.sim.host`; only the server composes them, and only the two ways
of running it import the server.
"""

from __future__ import annotations

import ast
from pathlib import Path

import inferlab.sim

SIM = Path(inferlab.sim.__file__).parent
#: the modules that run the server: as a process (``sim serve``) and on a thread of this one
RUNNERS = {"launch", "inprocess"}


def _trees() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(SIM.glob("*.py"))}


def _private_reaches(tree: ast.Module) -> list[str]:
    """``obj._name`` where ``obj`` is not ``self``/``cls`` (dunders are not private)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") and node.attr.endswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        out.append(f"line {node.lineno}: {ast.unparse(node)}")
    return out


def _sim_imports(tree: ast.Module) -> set[str]:
    """The ``inferlab.sim`` modules a module imports (``TYPE_CHECKING`` imports included)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "inferlab.sim":
                out |= {a.name for a in node.names}
            elif node.module.startswith("inferlab.sim."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[2] for a in node.names if a.name.startswith("inferlab.sim.")}
    return out


def test_no_module_reaches_into_another_objects_privates() -> None:
    found = {name: hits for name, tree in _trees().items() if (hits := _private_reaches(tree))}
    assert found == {}


def test_only_the_runners_import_the_server() -> None:
    importers = {name for name, tree in _trees().items() if "server" in _sim_imports(tree)}
    assert importers == RUNNERS


def test_no_import_circle() -> None:
    graph = {name: _sim_imports(tree) for name, tree in _trees().items()}

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


def test_the_host_protocol_is_at_the_bottom() -> None:
    """``host`` imports no module of the request path, nor the server."""
    path = {"server", "http", "endpoints", "pacing", "inject", "batching"}
    assert _sim_imports(_trees()["host"]) & path == set()
