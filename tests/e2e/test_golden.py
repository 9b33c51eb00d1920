"""What a user reads does not change unless a change means it to (issue 27's golden dumps).

``scripts/golden.py`` regenerates every dump (compare JSON/CSV/Markdown, report.md, levers
JSON, exports, runs, logs analyze JSON) from committed stores and log fixtures; a refactor must
leave them byte-identical, timestamps and paths aside. A change that means to alter one runs
``python scripts/golden.py write`` and commits the diff with its reason."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from support import ROOT


def _golden():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("golden", ROOT / "scripts" / "golden.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["golden"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_every_golden_dump_is_unchanged() -> None:
    golden = _golden()
    now = golden.dumps()
    stored = {p.name: p.read_text() for p in golden.GOLDEN.glob("*.*") if p.is_file()}
    assert sorted(now) == sorted(stored), "dumps added or removed: python scripts/golden.py write"
    changed = [name for name in sorted(now) if now[name] != stored[name]]
    assert not changed, f"changed: {changed} (python scripts/golden.py check shows the diff)"
    assert any(n.endswith(".report.md") for n in now) and len(now) > 80


def test_timestamps_and_paths_are_normalised() -> None:
    """The dumps run in this process (``support.cli``), whose PYTHONHASHSEED differs from run
    to run: the report's profile diff once ordered tied rows by set order and differed between
    runs; only times and paths may differ, and those are normalised."""
    golden = _golden()
    text = golden._normalise(
        f'at 2026-12-02T04:00:40+0000 in {ROOT}/x, "seconds": 0.04', ROOT / "t"
    )
    assert text == 'at <TS> in <ROOT>/x, "seconds": <ELAPSED>'
    # a store made in another checkout (CI clones to another path) names that checkout's root
    made_elsewhere = golden._normalise(
        "launch: /work/main/.venv/bin/python -I /work/main/src/inferlab/server/guard.py; "
        "trace /check/w/inferlab-out/a/rank0.json <ROOT>/src/inferlab/x.py /usr/bin/env",
        ROOT / "t",
    )
    assert made_elsewhere == (
        "launch: <ROOT>/.venv/bin/python -I <ROOT>/src/inferlab/server/guard.py; "
        "trace <ROOT>/inferlab-out/a/rank0.json <ROOT>/src/inferlab/x.py /usr/bin/env"
    )


def test_every_input_is_committed() -> None:
    """A store the dumps come from must be in git, not only on the machine that wrote them:
    ``*.db`` is ignored, and a clean clone once had no demo store (CI failed on it)."""
    golden = _golden()
    inputs = [str(p.relative_to(ROOT)) for p in golden.inputs()]
    tracked = subprocess.run(
        ["git", "ls-files", "--", *inputs], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(set(inputs) - set(tracked)) == []
    assert len(inputs) > 60
