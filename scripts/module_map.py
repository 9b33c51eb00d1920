"""The module map, docs/modules.md: one line a module of src/inferlab, its docstring's first line.

    python scripts/module_map.py           # rewrite the map between the markers in docs/modules.md
    python scripts/module_map.py --check   # exit 1 when the map is not the code's (make lint)

A module without a docstring is listed as "(no docstring)" and fails ``--check``: every module
says in one line what it is.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DOC = ROOT / "docs" / "modules.md"
BEGIN = "<!-- module map: scripts/module_map.py writes what follows; do not edit by hand -->"
END = "<!-- end of module map -->"


def first_line(path: Path) -> str | None:
    """The first sentence line of the module's docstring (None: it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc or not doc.strip():
        return None
    return doc.strip().splitlines()[0].strip()


def module_map() -> tuple[list[str], list[str]]:
    """(the map's lines, the modules without a docstring)."""
    lines, missing = [], []
    for pkg in sorted({p.parent for p in (SRC / "inferlab").rglob("*.py")}):
        rel = pkg.relative_to(SRC).as_posix()
        lines += ["", f"**{rel}/**", ""]
        for p in sorted(pkg.glob("*.py")):
            name = p.relative_to(SRC / "inferlab").as_posix()
            text = first_line(p)
            if text is None:
                if p.name == "__init__.py" and not p.read_text(encoding="utf-8").strip():
                    continue  # an empty package marker says nothing
                missing.append(name)
                text = "(no docstring)"
            lines.append(f"- `{name}` — {text}")
    return lines[1:], missing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when docs/modules.md is stale")
    args = ap.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"{DOC}: no module-map markers ({BEGIN!r} … {END!r})", file=sys.stderr)
        return 1
    lines, missing = module_map()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail
    for m in missing:
        print(f"src/inferlab/{m}: no module docstring (one line: what it is)", file=sys.stderr)
    if args.check:
        if new != text:
            print(
                f"{DOC}: the module map is stale: run python scripts/module_map.py", file=sys.stderr
            )
            return 1
        return 1 if missing else 0
    DOC.write_text(new, encoding="utf-8")
    print(f"{DOC}: {sum(1 for x in lines if x.startswith('- '))} modules")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
