"""Golden dumps of everything a user reads, from committed stores and fixtures (issue 27).

    python scripts/golden.py write   # (re)write tests/fixtures/golden/ from the current code
    python scripts/golden.py check   # regenerate and diff against tests/fixtures/golden/; rc 1

The inputs never change: the stores under ``tests/fixtures/golden/stores/`` (a ``demo --sim``
store) and ``benchmarks/results/h200-*.db.xz`` (the H200 ``transformers serve`` and vLLM
stores), all packed (``scripts/stores.py`` unpacks them into the temporary folder), and every
server log under ``tests/fixtures/``. For each store and campaign: ``compare --format`` json,
csv and md; ``report`` (report.md); ``levers --format json``; ``export`` of runs (CSV, JSONL)
and of requests (their digest: first lines, line count, SHA-256); ``runs``. For each log:
``logs analyze --format json``. Timestamps and paths are normalised (``<TS>``, ``<TMP>``,
``<ROOT>``) so that a refactor's dumps are byte-identical to the ones before it.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
GOLDEN = FIXTURES / "golden"
STORES = GOLDEN / "stores"
#: the committed stores: a ``demo --sim`` store (golden/stores/) and the H200 runs' stores
RESULTS = ROOT / "benchmarks" / "results"
LOG_SUFFIXES = (".log", ".log.gz")
for _path in (ROOT / "tests", ROOT / "scripts"):  # support.cli: the in-process entry point
    if str(_path) not in sys.path:  # stores: the packed stores' reader
        sys.path.insert(0, str(_path))
_TS = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}| UTC)?")
_EPOCH = re.compile(
    r'("(?:created|started|ended|finished|made|at|ts|time)[a-z_]*"\s*:\s*)\d{9,}(\.\d+)?'
)


def _inferlab(*args: str, cwd: Path) -> str:
    """``inferlab ARGS`` run in this process (tests/support/cli.py: the real entry point, its
    streams captured apart; ~70 ms a call where a subprocess costs ~0.8 s of imports)."""
    from support.cli import run_cli

    r = run_cli(*args, cwd=cwd, env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb",
                                     "INFERLAB_DB": None})  # fmt: skip
    out, err = (_lines(x) for x in (r.stdout, r.stderr))
    return f"rc={r.exit_code}\n--- stdout\n{out}--- stderr\n{err}"


def _lines(text: str) -> str:
    """Universal newlines, as a subprocess read in text mode gives them (the CSV writer's
    ``\\r\\n`` reads as ``\\n``)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


#: how long the analysis itself took (logs analyze: "seconds"), the one wall-clock field
_ELAPSED = re.compile(r'("seconds"\s*:\s*)\d+(\.\d+)?')


#: a checkout's root written into a committed store where it was made (a launch line, a trace's
#: path): whatever that root was, the part before .venv/bin/, src/inferlab/ or inferlab-out/
#: (not an image's /opt/... install, which is the same everywhere)
_STORED_ROOT = re.compile(
    r"(?<![\w>.-])/(?!opt/)(?:[\w.+-]+/)+?(?=\.venv/bin/|src/inferlab/|inferlab-out/)"
)


def _normalise(text: str, tmp: Path) -> str:
    text = text.replace(str(tmp), "<TMP>").replace(str(ROOT), "<ROOT>")
    text = _STORED_ROOT.sub("<ROOT>/", text)
    text = _ELAPSED.sub(r"\1<ELAPSED>", text)
    text = _TS.sub("<TS>", text)
    return _EPOCH.sub(r"\1<TS>", text)


def _digest(text: str) -> str:
    """A large export as its first lines, its line count and the SHA-256 of the whole (after
    normalisation), so the golden files stay small."""
    lines = text.splitlines()
    head = "\n".join(lines[:5])
    return f"{head}\n... {len(lines)} lines, sha256 {hashlib.sha256(text.encode()).hexdigest()}\n"


def _campaigns(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT name FROM campaigns ORDER BY name").fetchall()
    finally:
        con.close()
    return [str(r[0]) for r in rows if r[0]]


def _logs() -> list[Path]:
    found = []
    for path in sorted(FIXTURES.rglob("*")):
        if GOLDEN in path.parents or not path.is_file():
            continue
        if path.name.endswith(LOG_SUFFIXES):
            found.append(path)
    return found


#: the stores the dumps are made from; each must be committed (``*.db`` is ignored: git add -f);
#: a ``.db.xz`` is unpacked first and dumped under its ``.db`` name
INPUT_STORES = (
    STORES / "demo-sim.db.xz",
    RESULTS / "h200-transformers.db.xz",
    RESULTS / "h200-vllm.db.xz",
)


def _unpacked(store: Path, into: Path) -> Path:
    """``store`` itself, or a packed ``X.db.xz`` unpacked to ``into/X.db``."""
    if store.suffix != ".xz":
        return store
    from stores import unpack

    into.mkdir(exist_ok=True)
    return unpack(store, into / store.with_suffix("").name)


def inputs() -> list[Path]:
    """Every file the dumps are made from: the stores and the log fixtures."""
    return [*INPUT_STORES, *_logs()]


def dumps() -> dict[str, str]:
    """Every golden dump, by its file name under tests/fixtures/golden/."""
    missing = [str(p.relative_to(ROOT)) for p in INPUT_STORES if not p.is_file()]
    if missing:
        raise SystemExit(f"golden: the committed store(s) {', '.join(missing)} are missing")
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="golden-") as t:
        tmp = Path(t)
        for packed in INPUT_STORES:
            store = _unpacked(packed, tmp / "unpacked")
            for campaign in _campaigns(store):
                db = tmp / f"{store.stem}.db"  # a fresh copy each campaign: levers writes
                shutil.copy(store, db)
                key = f"{store.stem}.{campaign}"
                for fmt in ("json", "csv", "md"):
                    out[f"{key}.compare.{fmt}"] = _inferlab(
                        "compare", "--db", str(db), "--campaign", campaign, "--format", fmt, cwd=tmp
                    )
                out[f"{key}.runs.txt"] = _inferlab("runs", "--db", str(db), cwd=tmp)
                rep = tmp / f"report-{key}"
                log = _inferlab("report", campaign, "--db", str(db), "--out-dir", str(rep), cwd=tmp)
                md = rep / "report.md"
                out[f"{key}.report.md"] = md.read_text() if md.exists() else log
                for what in ("runs", "requests"):
                    for suffix in ("csv", "jsonl"):
                        dest = tmp / f"{key}.{what}.{suffix}"
                        log = _inferlab(
                            "export", "--out", str(dest), "--db", str(db), "--what", what,
                            "--campaign", campaign, cwd=tmp,
                        )  # fmt: skip
                        text = dest.read_text() if dest.exists() else log
                        out[f"{key}.export-{what}.{suffix}"] = (
                            _digest(_normalise(text, tmp)) if what == "requests" else text
                        )
                out[f"{key}.levers.json"] = _inferlab(
                    "levers", campaign, "--db", str(db), "--format", "json", cwd=tmp
                )
        for log_path in _logs():
            rel = log_path.relative_to(FIXTURES).as_posix().replace("/", "__")
            out[f"logs.{rel}.json"] = _inferlab(
                "logs", "analyze", "--format", "json", str(log_path), cwd=tmp
            )
        return {name: _normalise(text, tmp) for name, text in out.items()}


def main(argv: list[str]) -> int:
    if argv[1:] not in (["write"], ["check"]):
        print(__doc__, file=sys.stderr)
        return 2
    current = dumps()
    if argv[1] == "write":
        for old in GOLDEN.glob("*.*"):
            if old.is_file():
                old.unlink()
        for name, text in current.items():
            (GOLDEN / name).write_text(text)
        print(f"wrote {len(current)} golden dumps to {GOLDEN.relative_to(ROOT)}")
        return 0
    bad = 0
    names = {p.name for p in GOLDEN.glob("*.*") if p.is_file()}
    for name in sorted(names | set(current)):
        want = (GOLDEN / name).read_text() if name in names else ""
        have = current.get(name, "")
        if want != have:
            bad += 1
            diff = difflib.unified_diff(
                want.splitlines(), have.splitlines(), f"golden/{name}", "now", lineterm="", n=1
            )
            print("\n".join(list(diff)[:40]))
    print(f"{len(current)} dumps, {bad} differ from tests/fixtures/golden/")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
