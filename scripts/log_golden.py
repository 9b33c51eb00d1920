"""Dump what log mining makes of a set of logs, to compare two versions of the code byte for byte.

For every file under the given folders (and each line of it alone, with ``--lines``; each two
lines glued into one, as a lost newline does, with ``--glued``), under every
``--engine`` choice: the JSON that ``inferlab logs analyze --format json`` prints (run through
the CLI, ``seconds`` dropped) and the parsers' state (``LogState``'s fields, caches left out).
One JSON object a line, in a fixed order, so ``cmp`` / ``diff`` of two dumps is the check::

    PYTHONPATH=/tmp/old/src python scripts/log_golden.py --out old.jsonl --lines DIR...
    python scripts/log_golden.py --out new.jsonl --lines DIR...
    cmp old.jsonl new.jsonl

Which code runs is whichever ``inferlab`` the interpreter imports (``PYTHONPATH`` first).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ENGINES = ("auto", "sglang", "vllm", "llamacpp")
#: state fields that are caches or generator handles, not what was parsed
SKIP = {"rng", "getrandbits", "rank_cache", "decode_form"}


def plain(x: Any) -> Any:
    """``x`` as JSON-able data (dataclasses as dicts, tuple keys as strings, floats exact)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        return {repr(k) if not isinstance(k, str) else k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, float):
        return repr(x)
    return x


def state_of(path: Path, engine: str) -> dict[str, Any]:
    """The parsers' state after one log (``inferlab.logs.analyze._state``)."""
    from inferlab.logs.analyze import _state

    st, _ = _state(path, engine)
    return {
        f.name: plain(getattr(st, f.name)) for f in dataclasses.fields(st) if f.name not in SKIP
    }


def cli_json(paths: list[Path], engine: str) -> list[Any]:
    """``inferlab logs analyze --format json --engine ENGINE PATHS`` as data, ``seconds``
    dropped."""
    code = "import sys; from inferlab.cli.main import main; sys.argv[0] = 'inferlab'; main()"
    out: list[Any] = []
    for i in range(0, len(paths), 200):  # keep argv short
        argv = ["logs", "analyze", "--format", "json", "--engine", engine]
        argv += map(str, paths[i : i + 200])
        r = subprocess.run(
            [sys.executable, "-c", code, *argv],
            capture_output=True,
            text=True,
            check=False,
            env=os.environ,
        )
        for f in json.loads(r.stdout)["files"]:
            f.pop("seconds", None)
            out.append(f)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--lines", action="store_true", help="also each line of each file alone")
    ap.add_argument("--glued", action="store_true", help="also each two lines glued into one")
    ap.add_argument("--build-mb", type=int, default=0, help="also a generated log of this size")
    args = ap.parse_args()
    files = sorted(p for d in args.dirs for p in d.rglob("*") if p.is_file())
    with tempfile.TemporaryDirectory() as tmp, args.out.open("w") as out:
        singles: list[Path] = []
        for k, f in enumerate(files if args.lines or args.glued else []):
            lines = f.read_bytes().split(b"\n")
            for i, line in enumerate(lines):
                if args.lines and line.strip():
                    singles.append(Path(tmp) / f"{k:03d}-{i:05d}.log")
                    singles[-1].write_bytes(line + b"\n")
                if args.glued and i + 1 < len(lines) and line.strip():  # a lost newline
                    singles.append(Path(tmp) / f"{k:03d}-{i:05d}-glued.log")
                    singles[-1].write_bytes(line + lines[i + 1] + b"\n")
        if args.build_mb:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
            import log_throughput

            built = Path(tmp) / "built.log"
            log_throughput.build(built, args.build_mb << 20)
            files.append(built)
        everything = [*files, *singles]
        for engine in ENGINES:
            for p, js in zip(everything, cli_json(everything, engine), strict=True):
                rec = {"file": str(p), "engine": engine, "cli": js}
                if "error" not in js:
                    rec["state"] = state_of(p, engine)
                out.write(json.dumps(rec, sort_keys=True).replace(tmp, "<tmp>") + "\n")
    print(f"{args.out}: {len(everything)} files x {len(ENGINES)} engines", file=sys.stderr)


if __name__ == "__main__":
    main()
