"""Random kills: SIGKILL ``inferlab run`` at chosen moments, resume after each, check the store.

A campaign of SIMULATED configs × load points (6 × 3 by default) runs once cleanly (the reference
cells). Then the same campaign runs into a fresh store and the runner is SIGKILLed (by pid)
``--kills`` times, each at a moment drawn over the phases — launch, verify, measuring, scraping
(a point's end, while the server's /metrics scrape is stopped and the point committed), stop,
report — and resumed (``--resume``) after each, until a last resume finishes it. Checked:

- the final store holds exactly the clean run's cells (config, load point, trial; every
  request), each once;
- at most one unfinished point lost per kill: every point the runner reported finished before
  it was killed is in the store;
- ``PRAGMA integrity_check`` is ok;
- no server of the campaign is left running: none once a killed runner's server had its grace
  to go down (it gets SIGTERM as the runner dies), none after the final resume (each server
  carries a unique ``--model`` marker; the harness reaps any it finds, so none outlives it);
- with ``--files``, every other config (c0, c2, ...) installs kernel-config files (``files = { fp8_gemm }``)
  into the engine's package (its own copy of inferlab, so nothing here is touched): the
  package's config directory is as it was before the campaign after the final resume, and no
  install manifest is left pending — a kill with files installed is restored by the next run.

    python benchmarks/kill_resume.py [--kills 20] [--seed 0] [--files] [--record]
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent

#: phase → the runner's progress line that opens it (stderr), as a regex
PHASES: dict[str, str] = {
    "launch": r": launching \.\.\.",
    "verify": r": verifying \.\.\.",
    "measure": r"C=\d+: preparing \d+ prompts",
    "scrape": r"C=\d+: counting tokens",
    "stop": r": stopping \.\.\.",
    "report": r"^{last}: (?:measured|skipped)",  # the last config's outcome: the report is next
}
WORK = ("launch", "verify", "measure", "scrape", "stop")

CAMPAIGN = """
[campaign]
name = "killres"
output = "{out}"

[engine]
kind = "sim"
model = "{marker}"{python}
args = ["--ttft-ms", "2", "--itl-ms", "2"]
ready_timeout_s = 30
stop_grace_s = 5
{configs}
[verify]
probes = [{{ prompt = "hi", expect = '\\w' }}]

[load]
workload = {{ input_tokens = 8, output_tokens = 16 }}
concurrency = [{points}]
requests = {requests}
launches = 1  # one launch a config: kills across launch rounds are tests/e2e/test_run_rounds.py's
max_launches = 1
"""


def config_names(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


@dataclass
class Kill:
    phase: str
    delay_s: float
    killed: bool = False
    seen: str = ""  # the line it was killed after
    finished: list[tuple[str, str]] = field(default_factory=list)  # (config, point) reported
    lost: list[tuple[str, str]] = field(default_factory=list)  # reported but not stored
    orphans: int = 0  # servers of the campaign found running after the kill
    files_left: bool = False  # kernel-config files still installed after the kill (--files)


def write_campaign(
    d: Path, configs: int, points: tuple[int, ...], requests: int, files: Path | None = None,
    python: Path | None = None,
) -> tuple[Path, str]:  # fmt: skip
    """``configs`` configs (ITL 1, 2, 3 ... ms) × ``points`` concurrencies (with ``files``, the
    even ones (c0, c2, ...) install that kernel-config directory); returns the file and the marker its servers
    carry (``--model``)."""
    marker = f"killres-{uuid.uuid4().hex[:10]}"
    lever = f'files = {{ fp8_gemm = "{files}" }}\n' if files else ""
    blocks = "".join(
        f'\n[[config]]\nname = "{n}"\nset = {{ "--itl-ms" = "{i + 1}" }}\n'
        + (lever if i % 2 == 0 else "")
        for i, n in enumerate(config_names(configs))
    )
    path = d / "c.toml"
    path.write_text(
        CAMPAIGN.format(
            out=d / "out",
            marker=marker,
            python=f'\npython = "{python}"' if python else "",
            configs=blocks,
            points=", ".join(map(str, points)),
            requests=requests,
        )
    )
    return path, marker


def _cmd(campaign: Path, db: Path) -> list[str]:
    return [sys.executable, "-m", "inferlab.cli.main", "run", str(campaign), "--resume", "--db",
            str(db)]  # fmt: skip


def run_to_end(campaign: Path, db: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _cmd(campaign, db), cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip


def _pump(stream: IO[str], out: queue.Queue[str | None]) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def run_killed(campaign: Path, db: Path, cwd: Path, kill: Kill, nth: int, last: str) -> Kill:
    """Run the campaign; SIGKILL the runner ``kill.delay_s`` after the ``nth`` line opening
    ``kill.phase`` (or let it finish when that never comes); ``last``: the last config."""
    proc = subprocess.Popen(
        _cmd(campaign, db), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert proc.stderr is not None
    rx = re.compile(PHASES[kill.phase].replace("{last}", re.escape(last)))
    # one thread reads the lines as they come: select() on the pipe beside a buffered
    # readline() saw lines only once more bytes arrived, so a kill could miss its line
    lines: queue.Queue[str | None] = queue.Queue()
    pump = threading.Thread(target=_pump, args=(proc.stderr, lines), daemon=True)
    pump.start()
    config, seen = "", 0
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            continue
        if line is None:
            break
        if m := re.search(r"config \d+/\d+: (\S+)", line):
            config = m.group(1)
        if m := re.search(r"✓ (C=\d+):", line):
            kill.finished.append((config, m.group(1)))
        if rx.search(line.strip()):
            seen += 1
            if seen == nth:
                time.sleep(kill.delay_s)
                os.kill(proc.pid, signal.SIGKILL)
                kill.killed, kill.seen = True, line.strip()[:80]
                break
    proc.wait(60)
    proc.stderr.close()
    return kill


def cells(db: Path) -> dict[tuple[str, str, int], tuple[int, int]]:
    """(config, point, trial) → (runs stored, requests stored) of finished points."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT g.name, r.label, r.trial, COUNT(DISTINCT r.id), COUNT(q.run_id) FROM runs r "
            "JOIN configs g ON g.id = r.config_id LEFT JOIN requests q ON q.run_id = r.id "
            "WHERE r.interrupted = 0 GROUP BY g.name, r.label, r.trial"
        ).fetchall()
    finally:
        con.close()
    return {(str(a), str(b), int(c)): (int(n), int(k)) for a, b, c, n, k in rows}


def integrity(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()


def servers_of(marker: str) -> list[int]:
    """Pids of running processes whose command line carries ``marker`` (a campaign's servers)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmd and b"sim\x00serve" in cmd:
            out.append(int(d.name))
    return out


def settled(marker: str, grace_s: float = 5.0) -> list[int]:
    """The campaign's servers still running ``grace_s`` after a kill: a killed runner's server
    is killed by its guard as the runner dies (``server/guard.py``) and may need a moment
    to shut down (the campaign's ``stop_grace_s`` is 5 s)."""
    deadline = time.monotonic() + grace_s
    left = servers_of(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = servers_of(marker)
    return left


def reap(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def plan_kills(
    n: int, rng: random.Random, phases: list[str] | None = None
) -> list[tuple[Kill, int]]:
    """``n`` kills over ``phases`` in turn (default: the work phases, then a fifth of them in
    the report), each after a random delay (0-0.3 s) past the first occurrence of its line in
    that run (the second, at random, for measure and scrape: one point gets done). A kill
    before a config's stop loses its unfinished point; the campaign advances on the kills
    after a stop, so most kills land on work still to do."""
    if phases is None:
        report = max(1, n // 5)
        names = [WORK[i % len(WORK)] for i in range(n - report)] + ["report"] * report
    else:
        names = [phases[i % len(phases)] for i in range(n)]
    out = []
    for phase in names:
        nth = rng.randint(1, 2) if phase in ("measure", "scrape") else 1
        out.append((Kill(phase, round(rng.uniform(0.0, 0.3), 3)), nth))
    return out


def campaign_under_kills(
    work: Path,
    kills: int,
    seed: int,
    *,
    configs: int = 3,
    points: tuple[int, ...] = (1, 2),
    requests: int = 6,
    phases: list[str] | None = None,
    files: bool = False,
) -> tuple[dict[tuple[str, str, int], tuple[int, int]], dict[str, object], list[Kill]]:
    """The clean cells, then the killed-and-resumed store's facts, and each kill."""
    rng = random.Random(seed)
    clean_dir, kill_dir = work / "clean", work / "killed"
    clean_dir.mkdir()
    kill_dir.mkdir()
    lever = _files_lever(work) if files else None
    tuned, python, pkg = lever or (None, None, None)
    before = _snapshot(pkg) if pkg else None
    path, marker = write_campaign(clean_dir, configs, points, requests, tuned, python)
    done = run_to_end(path, clean_dir / "db", clean_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    reference = cells(clean_dir / "db")
    path, marker = write_campaign(kill_dir, configs, points, requests, tuned, python)
    last = config_names(configs)[-1]
    db = kill_dir / "db"
    out: list[Kill] = []
    for kill, nth in plan_kills(kills, rng, phases):
        run_killed(path, db, kill_dir, kill, nth, last)
        left = settled(marker)
        kill.orphans = len(left)
        reap(left)  # the harness leaves nothing behind, whatever the runner does
        kill.files_left = pkg is not None and _snapshot(pkg) != before
        stored = cells(db) if db.exists() else {}
        kill.lost = [(c, p) for c, p in kill.finished if (c, p, 0) not in stored]
        out.append(kill)
    final = run_to_end(path, db, kill_dir)
    time.sleep(0.5)
    left = servers_of(marker)
    reap(left)
    facts: dict[str, object] = {
        "returncode": final.returncode,
        "stderr": final.stderr[-2000:],
        "cells": cells(db),
        "integrity": integrity(db),
        "orphans_after": len(left),
    }
    if pkg is not None:
        facts["files_restored"] = _snapshot(pkg) == before
        facts["files_pending"] = len(list((kill_dir / "out" / ".files").glob("*.json")))
    return reference, facts, out


def _files_lever(work: Path) -> tuple[Path, Path, Path]:
    """(tuned config directory, an engine Python with its own inferlab copy, that copy's
    kernel-config directory) for the ``files`` lever (the helpers of tests/support/pkgcopy.py)."""
    sys.path.insert(0, str(ROOT.parent / "tests"))
    from inferlab.sim.presets import get_preset
    from inferlab.tune.config import DEFAULT_SGLANG
    from inferlab.tune.files import write_config_file
    from support.pkgcopy import isolated_inferlab, sim_configs

    python = isolated_inferlab(work / "engine")
    tuned = work / "tuned"
    for n, k in get_preset("generic").fp8_gemm_shapes[:2]:
        write_config_file(tuned, "sglang", n, k, "NVIDIA H100 80GB HBM3", {1: DEFAULT_SGLANG})
    return tuned, python, sim_configs(python)


def _snapshot(d: Path) -> dict[str, bytes] | None:
    """The directory's files and bytes (None: it does not exist)."""
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())} if d.is_dir() else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--configs", type=int, default=6)
    ap.add_argument("--points", default="1,2,4")
    ap.add_argument("--files", action="store_true", help="c0, c2, ... install kernel files")
    ap.add_argument("--record", action="store_true", help="append the figures to RESULTS.md")
    args = ap.parse_args()
    t0 = time.monotonic()
    load0 = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="inferlab-kill-"))
    points = tuple(int(x) for x in args.points.split(","))
    reference, facts, kills = campaign_under_kills(
        work, args.kills, args.seed, configs=args.configs, points=points, files=args.files
    )
    final = facts["cells"]
    lines = [
        "| # | phase | after line | delay s | killed | points reported finished | of them lost "
        "| servers left running |",
        "|---:|---|---|---:|---|---:|---:|---:|",
    ]
    for i, k in enumerate(kills, 1):
        lines.append(
            f"| {i} | {k.phase} | `{k.seen or '(finished first)'}` | {k.delay_s:.3f} "
            f"| {'yes' if k.killed else 'no'} | {len(k.finished)} | {len(k.lost)} | {k.orphans} |"
        )
    same = final == reference
    lines += [
        "",
        f"- kills: {sum(k.killed for k in kills)} of {len(kills)} landed; phases: "
        + ", ".join(f"{p} {sum(1 for k in kills if k.phase == p and k.killed)}" for p in PHASES),
        f"- final store equals the clean run's cells: {same} ({len(reference)} cells, "
        f"{sum(n for _, n in reference.values())} requests)",
        f"- points reported finished and then lost: {sum(len(k.lost) for k in kills)}",
        f"- integrity_check: {facts['integrity']}; final resume exit code {facts['returncode']}",
        f"- servers of the campaign found running after a kill: "
        f"{sum(k.orphans for k in kills)} (after {sum(1 for k in kills if k.orphans)} kills); "
        f"after the final resume: {facts['orphans_after']}",
        *(
            [
                f"- kernel-config files: still installed after {sum(k.files_left for k in kills)}"
                f" kills (restored by the next run); package as before after the final resume:"
                f" {facts['files_restored']}; manifests left pending: {facts['files_pending']}"
            ]
            if args.files
            else []
        ),
        f"- {time.monotonic() - t0:.0f} s, load1 {load0:.2f} → {os.getloadavg()[0]:.2f}",
    ]
    text = "\n".join(lines)
    print(text)
    if not same:
        print("reference:", reference, "\nfinal:", final, file=sys.stderr)
    if args.record:
        with (ROOT / "RESULTS.md").open("a", encoding="utf-8") as f:
            f.write(
                f"\n### Random kills, {time.strftime('%Y-%m-%d %H:%M')} ({os.cpu_count()} CPUs, "
                f"{args.kills} kills, seed {args.seed}{', --files' if args.files else ''})"
                f"\n\n{text}\n"
            )


if __name__ == "__main__":
    main()
