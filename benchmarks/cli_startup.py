"""How long the ``inferlab`` command takes to start: ``--help``, a few commands' ``--help``, and
the bare ``import inferlab.cli.main``, each a fresh Python, ``--repeat`` times; and
``inferlab sim serve --port 0`` until it prints its "listening on" line (the reference engine
every campaign and most tests start).

Prints, per case, the median wall time and the spread (min, p25–p75, max) in ms, then the top
ten of ``python -X importtime -m inferlab --help`` by cumulative import time. With
``--baseline REV`` the same cases also run that revision's ``src`` (``git archive``, put first
on ``PYTHONPATH``), interleaved run by run (new, old, new, old, ...) because the machine may be
shared; ``/proc/loadavg`` is printed before and after.

    python benchmarks/cli_startup.py [--repeat 15] [--baseline main]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
BIN = Path(PY).parent

#: name → argv (a fresh process each)
CASES: dict[str, list[str]] = {
    "python -c pass (the floor)": [PY, "-c", "pass"],
    "python -m inferlab --help": [PY, "-m", "inferlab", "--help"],
    "inferlab --help (console script)": [str(BIN / "inferlab"), "--help"],
    "inferlab runs --help": [PY, "-m", "inferlab", "runs", "--help"],
    "inferlab bench --help": [PY, "-m", "inferlab", "bench", "--help"],
    "inferlab compare --help": [PY, "-m", "inferlab", "compare", "--help"],
    "inferlab sim serve --help": [PY, "-m", "inferlab", "sim", "serve", "--help"],
    'python -c "import inferlab.cli.main"': [PY, "-c", "import inferlab.cli.main"],
    "inferlab sim serve: until listening": [PY, "-m", "inferlab", "sim", "serve", "--port", "0"],
}
_READY = "listening on "


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _env(src: Path | None) -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "80"}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(":")
    return env


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one run (it must exit 0); of a server, until its ready line."""
    if "serve" in argv and "--help" not in argv:
        return _until_ready(argv, env)
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, timeout=120)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{argv}: exit {p.returncode}\n{p.stderr.decode()[-2000:]}")
    return took


def _until_ready(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    p = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert p.stdout is not None
        for line in p.stdout:
            if _READY in line:
                return time.perf_counter() - t0
        raise SystemExit(f"{argv}: exited {p.wait()} before it listened")
    finally:
        p.terminate()
        p.wait(10)


def spread(xs: list[float]) -> str:
    """``median (min, p25–p75, max)`` in ms."""
    ms = sorted(x * 1000 for x in xs)
    q = statistics.quantiles(ms, n=4) if len(ms) >= 2 else [ms[0]] * 3
    return f"{statistics.median(ms):7.0f} ({ms[0]:.0f}, {q[0]:.0f}–{q[2]:.0f}, {ms[-1]:.0f})"


def importtime_top(env: dict[str, str], n: int = 10) -> list[str]:
    """The ``n`` imports of ``inferlab --help`` with the largest cumulative time (µs)."""
    p = subprocess.run(
        [PY, "-X", "importtime", "-m", "inferlab", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = []
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cum, name = (s.strip() for s in line.removeprefix("import time:").split("|"))
        rows.append((int(cum), name))
    rows.sort(reverse=True)
    return [f"{cum / 1000:8.1f} ms  {name}" for cum, name in rows[:n]]


def archive(rev: str, into: Path) -> Path:
    """``rev``'s ``src`` unpacked under ``into``; returns that ``src``."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True)
    if tar.returncode != 0:
        raise SystemExit(f"git archive {rev}: {tar.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as t:
        t.extractall(into)
    return into / "src"


def run(repeat: int, baseline: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        codes: dict[str, dict[str, str]] = {"this tree": _env(None)}
        if baseline:
            codes[baseline] = _env(archive(baseline, Path(tmp)))
        for env in codes.values():  # warm-up: byte-compile, fill the page cache
            for argv in CASES.values():
                timed(argv, env)
        print(f"loadavg before: {loadavg()}  ({os.cpu_count()} CPUs, {repeat} runs each)")
        times: dict[tuple[str, str], list[float]] = {(c, k): [] for c in codes for k in CASES}
        for _ in range(repeat):
            for case, argv in CASES.items():
                for code, env in codes.items():
                    times[code, case].append(timed(argv, env))
        print(f"loadavg after:  {loadavg()}\n")
        head = "| case | " + " | ".join(f"{c}: median ms (min, p25–p75, max)" for c in codes)
        print(head + " |")
        print("|---|" + "---:|" * len(codes))
        for case in CASES:
            print(f"| {case} | " + " | ".join(spread(times[c, case]) for c in codes) + " |")
        for code, env in codes.items():
            print(f"\npython -X importtime -m inferlab --help, top 10 by cumulative ({code}):")
            print("\n".join(importtime_top(env)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="runs of each case (default 15)")
    ap.add_argument("--baseline", help="a git revision to compare with (interleaved runs)")
    args = ap.parse_args()
    run(args.repeat, args.baseline)


if __name__ == "__main__":
    main()
