"""Code-size targets for src/ (issue 19), run by ``make lint``.

- no module over ``MAX_MODULE`` lines;
- no function over ``MAX_FUNCTION`` lines (decorators and docstring included), except those in
  ``ALLOW``, each with the one-line reason a longer one reads better.

Prints one line per breach (``path:line name: N lines (max M)``) and exits 1 when there is
any; ``--list`` prints every module and function over the limits, allowed or not.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

MAX_MODULE = 400
MAX_FUNCTION = 60

#: "package/module.py:function" → why it stays longer than MAX_FUNCTION
ALLOW: dict[str, str] = {
    "inferlab/store/schema.py:upgrade_to_1": "the version-1 DDL, one statement per table, "
    "read as the schema's own record",
    "inferlab/cli/bench.py:bench": "one parameter per option of `inferlab bench` (typer reads "
    "the signature)",
}


def _span(node: ast.AST) -> tuple[int, int]:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])  # type: ignore[attr-defined]
    return first, node.end_lineno or first  # type: ignore[attr-defined]


def scan(root: Path) -> tuple[list[tuple[str, int]], list[tuple[str, int, str, int]]]:
    """(modules over the limit as (path, lines), functions over it as (path, line, name, lines))
    for every .py file below ``root``; paths relative to ``root``."""
    mods: list[tuple[str, int]] = []
    funcs: list[tuple[str, int, str, int]] = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        text = p.read_text(encoding="utf-8")
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if n > MAX_MODULE:
            mods.append((rel, n))
        for node in ast.walk(ast.parse(text, filename=str(p))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a, b = _span(node)
                if b - a + 1 > MAX_FUNCTION:
                    funcs.append((rel, a, node.name, b - a + 1))
    return mods, funcs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default="src", help="the tree to check (default: src)")
    ap.add_argument("--list", action="store_true", help="print allowed ones too")
    args = ap.parse_args(argv)
    root = Path(args.root)
    mods, funcs = scan(root)
    bad = 0
    for rel, n in mods:
        print(f"{root / rel}: {n} lines (max {MAX_MODULE} a module)")
        bad += 1
    seen = set()
    for rel, line, name, n in funcs:
        key = f"{rel}:{name}"
        seen.add(key)
        if key in ALLOW:
            if args.list:
                print(f"{root / rel}:{line} {name}: {n} lines (allowed: {ALLOW[key]})")
            continue
        print(f"{root / rel}:{line} {name}: {n} lines (max {MAX_FUNCTION} a function)")
        bad += 1
    for key in sorted(set(ALLOW) - seen):
        print(f"scripts/check_size.py: ALLOW names {key}, which is not over the limit: remove it")
        bad += 1
    if bad:
        print(f"{bad} over the size targets (scripts/check_size.py)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
