"""One home per fact (issue 46), scanned on the syntax tree of every module of ``src/inferlab``.

- The campaign's baseline is its first config, and only ``campaign/parts/plan.py`` says so
  (``baseline_of``): a ``config[0]`` or ``configs[0]`` subscript elsewhere is a second home.
- What an engine is lives in ``engines/``: a comparison with an engine's name (``== "sim"``,
  ``in ("sglang", "vllm")``) outside it is a fact kept in generic code; ask the ``EngineSpec``
  (``is_simulated``, its fields) instead."""

from __future__ import annotations

import ast
from pathlib import Path

import inferlab
from inferlab.engines import registered

SRC = Path(inferlab.__file__).parent
HOME = "campaign/parts/plan.py"


def _first_config(tree: ast.AST) -> list[int]:
    """Lines of ``config[0]`` / ``configs[0]`` subscripts in one module's syntax tree."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)):
            continue
        v = node.value
        name = v.id if isinstance(v, ast.Name) else v.attr if isinstance(v, ast.Attribute) else ""
        if name in ("config", "configs") and node.slice.value == 0:
            out.append(node.lineno)
    return out


def _scan() -> dict[str, list[int]]:
    """Module (relative to ``inferlab/``, the home left out) → its ``configs[0]`` lines."""
    found = {}
    for p in sorted(SRC.rglob("*.py")):
        rel = p.relative_to(SRC).as_posix()
        lines = _first_config(ast.parse(p.read_text("utf-8")))
        if rel != HOME and lines:
            found[rel] = lines
    return found


def test_the_baseline_has_one_home() -> None:
    found = _scan()
    assert found == {}, f"the baseline taken as configs[0] outside {HOME} (use baseline_of): " + (
        ", ".join(f"{m}:{','.join(map(str, n))}" for m, n in found.items())
    )


def test_the_home_holds_it() -> None:
    assert _first_config(ast.parse((SRC / HOME).read_text("utf-8"))), f"{HOME} lost baseline_of"


def test_the_scan_sees_one() -> None:
    assert _first_config(ast.parse("base = plan.configs[0]\nb = config[0]")) == [1, 2]
    assert _first_config(ast.parse("x = configs[1:]\ny = rows[0]\nz = configs[i]")) == []


#: module → (how many engine-name comparisons may stay there, why)
ENGINE_ALLOW = {
    "stats/recheck.py": (1, "stats/ sits beside engines/ in the layers: it cannot ask it"),
    # on another branch (issue 46): this becomes is_simulated there
    "levers/evidence.py": (1, "pending is_simulated (another branch owns levers/)"),
}


def _engine_names(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines of ``==``/``!=``/``in`` comparisons with an engine's name (a string, or one in
    a tuple or set literal)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        if not any(isinstance(o, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for o in node.ops):
            continue
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, ast.Tuple | ast.Set) else [side]
            if any(isinstance(x, ast.Constant) and x.value in names for x in items):
                out.append(node.lineno)
                break
    return out


def _engine_scan() -> dict[str, list[int]]:
    names = set(registered())
    found = {}
    for p in sorted(SRC.rglob("*.py")):
        rel = p.relative_to(SRC).as_posix()
        lines = _engine_names(ast.parse(p.read_text("utf-8")), names)
        if not rel.startswith("engines/") and lines:
            found[rel] = lines
    return found


def test_engine_names_stay_in_engines() -> None:
    over = {m: n for m, n in _engine_scan().items() if len(n) > ENGINE_ALLOW.get(m, (0, ""))[0]}
    assert over == {}, "an engine's name compared outside engines/ (ask its EngineSpec): " + (
        ", ".join(f"{m}:{','.join(map(str, n))}" for m, n in over.items())
    )


def test_the_engine_allow_list_is_not_stale() -> None:
    found = _engine_scan()
    stale = sorted(m for m, (n, _) in ENGINE_ALLOW.items() if len(found.get(m, [])) < n)
    assert stale == [], f"ENGINE_ALLOW counts more comparisons than are left in {stale}"


def test_the_engine_scan_sees_one() -> None:
    names = {"sim", "vllm", "sglang"}
    code = 'a = kind == "sim"\nb = e in ("sglang", "vllm")\nc = x != "vllm"'
    assert _engine_names(ast.parse(code), names) == [1, 2, 3]
    other = 'a = words == ["sim", "serve"]\nb = kind == "simulated"\nc = f("sim")'
    assert _engine_names(ast.parse(other), names) == []
