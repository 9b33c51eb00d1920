"""A ratchet on untyped JSON in ``src/``: the count of ``dict[str, Any]`` may fall, never rise.

    python scripts/any_ratchet.py           # print the counts (and the largest holders)
    python scripts/any_ratchet.py --check   # rc 1 when dict[str, Any] is above LIMIT

Counted on the AST (a ``dict[str, Any]`` subscript anywhere: annotations, casts, defaults),
so that comments and docstrings do not count. ``Any`` is every use of the name (reported,
not gated). When a change types something, lower ``LIMIT`` to the new count in the same
commit (``make lint`` runs ``--check``).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "inferlab"
#: the most ``dict[str, Any]`` src/ may hold; lower it when a change types something
LIMIT = 244


def _is_name(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (
        isinstance(node, ast.Attribute) and node.attr == name
    )


def _dict_str_any(node: ast.AST) -> bool:
    """``dict[str, Any]`` (or ``typing.Dict[str, Any]``)."""
    if not (isinstance(node, ast.Subscript) and (_is_name(node.value, "dict")
                                                 or _is_name(node.value, "Dict"))):  # fmt: skip
        return False
    s = node.slice
    return (
        isinstance(s, ast.Tuple)
        and len(s.elts) == 2
        and _is_name(s.elts[0], "str")
        and _is_name(s.elts[1], "Any")
    )


def counts(root: Path = SRC) -> tuple[Counter[str], Counter[str]]:
    """Per file (relative to ``root``): ``dict[str, Any]`` count, ``Any`` count."""
    dicts: Counter[str] = Counter()
    anys: Counter[str] = Counter()
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if _dict_str_any(node):
                dicts[rel] += 1
            elif isinstance(node, ast.Name | ast.Attribute) and _is_name(node, "Any"):
                anys[rel] += 1
    return dicts, anys


def main(argv: list[str]) -> int:
    dicts, anys = counts()
    total, any_total = sum(dicts.values()), sum(anys.values())
    print(f"dict[str, Any]: {total} in {len(dicts)} files (limit {LIMIT}); Any: {any_total}")
    if "--check" not in argv:
        for rel, n in dicts.most_common(15):
            print(f"  {n:3d}  {rel}")
        return 0
    if total > LIMIT:
        print(
            f"dict[str, Any] rose to {total} (limit {LIMIT}): type the new JSON with a model "
            "(store.bodies for stored bodies) instead",
            file=sys.stderr,
        )
        return 1
    if total < LIMIT:
        print(f"(below the limit: lower LIMIT in {Path(__file__).name} to {total})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
