"""Fresh, interleaved launches of a campaign's configs, each read by `inferlab bench` and by
vLLM's own client (`vllm bench serve`); on one launch, interleaved repeats of both clients.

    python3 benchmarks/h200_launch_ab.py --campaign FILE --db DB --out DIR --tokenizer MODEL \
        --order baseline,A [--repeats-on 1 --repeats 3] [--deadline-s 500]
    python3 benchmarks/h200_launch_ab.py --summarize DIR/ab.json [more ab.json ...]

Run on the lent H200 by ``scripts/h200_vllm.sh run ab`` (issue 42). Each launch is ``inferlab
up FILE CONFIG --db DB`` (A's tuned files installed, the server verified and left running),
then both clients on the client CPUs ``up`` chose (``--client-cpus``; vLLM's client under
``taskset``), the order alternating from one launch to the next, then ``inferlab down`` (the
files restored, the GPU memory checked). `inferlab bench` stores each launch's points under
``--campaign NAME --config CONFIG`` (trial 0 each time: every invocation is a new launch in the
store, ``store.launches``); the repeats of the client question go under ``NAME-clients`` so
that they are not read as launches of the A/B. Everything raw lands in ``DIR/ab.json``,
rewritten after every step; ``--summarize`` prints each launch's TPOT from both clients, each
client's ratio of geometric means over launches and the client question's repeats.
TPOT is the median over requests of (E2E − TTFT) / (tokens − 1) for both clients (docs/peers.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import tomllib

MODEL_NAME = "m1b"
IN_TOKENS, OUT_TOKENS = 128, 64
#: requests a read at C=1 (both clients) and at the higher point (inferlab only), warm-ups each
REQ_C1, REQ_HI, WARMUP = 64, 256, 4
#: what a launch costs at least, s (a warm start ~45 s, both clients ~60 s, the stop ~10 s)
LAUNCH_S = 130


def _run(
    argv: list[str], log: Path, timeout_s: float, stdout: Path | None = None
) -> dict[str, Any]:
    """Run ``argv`` (stdout to ``stdout`` or the log) in a process group of its own, SIGINT'd
    at ``timeout_s`` (a bench keeps what it measured; a server is stopped); wall, CPU seconds
    (user + system of it and its waited-for children, from wait4), exit status."""
    t0 = time.monotonic()
    with log.open("w") as f, (stdout or log).open("a") as o:
        p = subprocess.Popen(argv, stdout=o if stdout else f, stderr=f, start_new_session=True)
        sent = 0
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            late = time.monotonic() - t0 - max(1.0, timeout_s)
            if (late > 0 and sent == 0) or (late > 30 and sent == 1):
                os.killpg(p.pid, 9 if sent else 2)
                sent += 1
            time.sleep(0.2)
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"argv": argv, "wall_s": round(time.monotonic() - t0, 2),
            "cpu_s": round(ru.ru_utime + ru.ru_stime, 2), "rc": p.returncode, "log": log.name,
            "interrupted": bool(sent)}  # fmt: skip


class Session:
    """One device call's launches: the paths, the deadline, the document written as it grows."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a, self.out = a, a.out
        self.t0 = time.monotonic()
        self.reserve = 0.0  # seconds the launches still to come need
        self.il = [sys.executable, "-m", "inferlab"]
        self.doc: dict[str, Any] = {"campaign_file": str(a.campaign), "campaign": a.name,
                                    "workload": [IN_TOKENS, OUT_TOKENS], "launches": []}  # fmt: skip
        self.path = a.out / "ab.json"
        if self.path.is_file():  # a second call on the same machine: one document
            self.doc["launches"] = json.loads(self.path.read_text()).get("launches", [])

    def left(self) -> float:
        return self.a.deadline_s - (time.monotonic() - self.t0)

    def save(self) -> None:
        self.path.write_text(json.dumps(self.doc, indent=1))

    def say(self, msg: str) -> None:
        print(f"[ab {time.monotonic() - self.t0:.0f} s] {msg}", flush=True)


def config_file(s: Session, config: str) -> Path:
    """The campaign file with ``[engine] port`` set for ``config``: `inferlab bench` keeps the
    URL in its config row (and not the config's flags), so each config is served at a URL of
    its own, the same at every launch: one config row, hence one config's launches, each."""
    src = s.a.campaign.read_text()
    names = [c.get("name") for c in tomllib.loads(src).get("config", [])]
    if config not in names:
        raise SystemExit(f"{s.a.campaign}: no config {config!r} (configs: {names})")
    path = s.out / f"campaign-{config}.toml"
    port = s.a.port + names.index(config)  # its place in the file: the same in every call
    text, n = re.subn(r"(?m)^\[engine\]$", f"[engine]\nport = {port}", src)
    if n != 1:
        raise SystemExit(f"{s.a.campaign}: expected one [engine] line, found {n}")
    path.write_text(text)
    return path


def _state(path: Path, config: str) -> dict[str, Any]:
    """The state file ``inferlab up`` left for ``config`` (url, pid, client CPUs)."""
    from inferlab.config.campaign import load_campaign

    path = load_campaign(path).output_dir / ".servers" / f"{config}.json"
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def inferlab_read(s: Session, ln: dict[str, Any], c: int, n: int, campaign: str) -> dict[str, Any]:
    """`inferlab bench` at concurrency ``c``, ``n`` requests, stored under ``campaign``."""
    k = len(ln["reads"])
    tag = f"{ln['index']:02d}-{ln['config']}-{k:02d}-inferlab-C{c}"
    argv = [*s.il, "bench", "--url", ln["url"], "--model", s.a.served, "--engine", s.a.engine,
            "--tokenizer", s.a.tokenizer, "--concurrency", str(c), "--requests", str(n),
            "--warmup", str(WARMUP), "--input-tokens", str(IN_TOKENS),
            "--output-tokens", str(OUT_TOKENS), "--db", str(s.a.db), "--campaign", campaign,
            "--as", ln["config"], "--format", "json"]  # fmt: skip
    if ln.get("client_cpus"):
        argv += ["--client-cpus", ln["client_cpus"]]
    js = s.out / f"{tag}.json"
    r = _run(argv, s.out / f"{tag}.log", min(240.0, s.left()), js)
    r.update(client="inferlab", concurrency=c, requests=n, campaign=campaign)
    try:
        pt = json.loads(js.read_text())["points"][0]
        sm = pt["summary"]
        r.update(tpot_ms=sm["tpot_ms"]["p50"], ttft_ms=sm["ttft_ms"]["p50"],
                 tok_s=sm.get("output_tok_s"), trust=pt.get("trust"), run_id=pt.get("run_id"),
                 lag_p99_ms=(pt.get("loop_lag_ms") or {}).get("p99"))  # fmt: skip
        js.unlink()  # the store holds it all
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        r["tpot_ms"] = None
    return r


def vllm_read(s: Session, ln: dict[str, Any], c: int, n: int) -> dict[str, Any]:
    """`vllm bench serve` (random prompts, --ignore-eos) on the client CPUs, ``n`` requests."""
    k = len(ln["reads"])
    tag = f"{ln['index']:02d}-{ln['config']}-{k:02d}-vllm-C{c}"
    argv = [sys.executable, "-m", "vllm.entrypoints.cli.main", "bench", "serve",
            "--backend", "vllm", "--base-url", ln["url"], "--endpoint", "/v1/completions",
            "--model", s.a.served, "--tokenizer", s.a.tokenizer, "--dataset-name", "random",
            "--random-input-len", str(IN_TOKENS), "--random-output-len", str(OUT_TOKENS),
            "--ignore-eos", "--num-prompts", str(n), "--max-concurrency", str(c),
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--num-warmups", str(WARMUP),
            "--disable-tqdm", "--save-result", "--result-dir", str(s.out),
            "--result-filename", f"{tag}.json"]  # fmt: skip
    if ln.get("client_cpus") and shutil.which("taskset"):
        argv = ["taskset", "-c", ln["client_cpus"], *argv]
    r = _run(argv, s.out / f"{tag}.log", min(240.0, s.left()))
    r.update(client="vllm", concurrency=c, requests=n)
    path = s.out / f"{tag}.json"
    try:
        v = json.loads(path.read_text())
        r.update(tpot_ms=v["median_tpot_ms"], ttft_ms=v["median_ttft_ms"],
                 tok_s=v.get("output_throughput"), mean_tpot_ms=v.get("mean_tpot_ms"),
                 completed=v.get("completed"))  # fmt: skip
        path.unlink()
    except (OSError, ValueError, KeyError):
        r["tpot_ms"] = None
    return r


def _reads(s: Session, ln: dict[str, Any], repeats: int) -> None:
    """The launch's reads: both clients, the order alternating by launch; with ``repeats``,
    vLLM's then inferlab's ``repeats`` times each at C=1 (the first pair is the A/B's)."""
    a, add = s.a, ln["reads"].append
    if repeats:
        for k in range(repeats):
            # the first pair is the A/B's, read whatever the deadline (on 2026-12-07 a check
            # here before it left launch 4 without a C=1 read); the later launches keep their time
            if k > 0 and s.left() < 60 + s.reserve:
                s.say(f"repeats stopped after {k} of {repeats}: the deadline")
                break
            add(vllm_read(s, ln, 1, REQ_C1) if a.vllm else {"client": "vllm", "skipped": True})
            s.save()
            add(inferlab_read(s, ln, 1, REQ_C1, a.name if k == 0 else f"{a.name}-clients"))
            s.save()
            s.say(f"repeat {k + 1}: " + ", ".join(_brief(r) for r in ln["reads"][-2:]))
        if a.hi:
            add(inferlab_read(s, ln, a.hi, REQ_HI, a.name))
        return
    first_vllm = ln["index"] % 2 == 1
    for who in ("vllm", "inferlab") if first_vllm else ("inferlab", "vllm"):
        if who == "vllm" and a.vllm:
            add(vllm_read(s, ln, 1, REQ_C1))
        elif who == "inferlab":
            add(inferlab_read(s, ln, 1, REQ_C1, a.name))
            if a.hi:
                add(inferlab_read(s, ln, a.hi, REQ_HI, a.name))
        s.save()
    s.say("reads: " + ", ".join(_brief(r) for r in ln["reads"]))


def _brief(r: dict[str, Any]) -> str:
    t = r.get("tpot_ms")
    return f"{r['client']} C={r.get('concurrency')} " + (f"{t:.3f} ms" if t else "failed")


def one_launch(s: Session, config: str, repeats: int) -> None:
    """``up`` → reads → ``down``, each step in the document as it ends."""
    a = s.a
    index = len(s.doc["launches"])
    ln: dict[str, Any] = {"index": index, "config": config, "reads": []}
    s.doc["launches"].append(ln)
    camp = config_file(s, config)
    up = _run([*s.il, "up", str(camp), config, "--db", str(a.db)],
              s.out / f"up-{index:02d}-{config}.log", min(480.0, s.left()))  # fmt: skip
    ln["up"] = up
    try:
        st = _state(camp, config)
        ln.update(url=st["url"], pid=st["pid"], client_cpus=(st.get("cpus") or {}).get("client"))
    except (OSError, ValueError, KeyError):
        ln["error"] = f"inferlab up failed (rc {up['rc']}): see {up['log']}"
    s.save()
    if "error" not in ln:
        s.say(f"launch {index} {config}: up in {up['wall_s']:.0f} s, {ln['url']}, client CPUs "
              f"{ln['client_cpus']}")  # fmt: skip
        _reads(s, ln, repeats)
    else:
        s.say(ln["error"])
    ln["down"] = _run([*s.il, "down", str(camp), config],
                      s.out / f"down-{index:02d}-{config}.log", 120)  # fmt: skip
    s.save()


def measure(a: argparse.Namespace) -> int:
    a.out.mkdir(parents=True, exist_ok=True)
    s = Session(a)
    order = [c for c in a.order.split(",") if c]
    for i, config in enumerate(order):
        need = LAUNCH_S + (a.repeats * 60 if i == a.repeats_on else 0)
        if s.left() < need:
            s.say(f"not launched: {', '.join(order[i:])} ({s.left():.0f} s left, {need} needed)")
            s.doc.setdefault("not_launched", []).extend(order[i:])
            break
        s.reserve = LAUNCH_S * (len(order) - i - 1)
        one_launch(s, config, a.repeats if i == a.repeats_on else 0)
    s.save()
    print(summarize([s.path]))
    return 0


def _gm(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summarize(paths: list[Path]) -> str:
    """Each launch's C=1 TPOT by both clients; each client's ratio over launches; repeats."""
    launches = [ln for p in paths for ln in json.loads(p.read_text())["launches"]]
    lines = ["| launch | config | inferlab TPOT C=1 (ms) | vLLM TPOT C=1 (ms) | inferlab C>1 |",
             "|---:|---|---:|---:|---:|"]  # fmt: skip
    per: dict[tuple[str, str], list[float]] = {}
    for n, ln in enumerate(launches):
        first: dict[str, float] = {}
        hi = ""
        for r in ln.get("reads", []):
            t = r.get("tpot_ms")
            if t and r.get("concurrency") == 1 and r["client"] not in first:
                first[r["client"]] = t
            elif t and (r.get("concurrency") or 1) > 1:
                hi = f"C={r['concurrency']} {t:.3f}"
        for who, t in first.items():
            per.setdefault((ln["config"], who), []).append(t)
        cell = {w: f"{first[w]:.3f}" if w in first else "–" for w in ("inferlab", "vllm")}
        lines.append(f"| {n} | {ln['config']} | {cell['inferlab']} | {cell['vllm']} | {hi} |")
    configs = list(dict.fromkeys(ln["config"] for ln in launches))
    if len(configs) >= 2:
        base, cand = configs[0], configs[1]
        for who in ("inferlab", "vllm"):
            b, c = per.get((base, who)), per.get((cand, who))
            if b and c:
                lines.append(f"\n{who}: {cand} / {base} = ×{_gm(c) / _gm(b):.3f} "
                             f"(geometric means of {len(c)} and {len(b)} launches)")  # fmt: skip
    for ln in launches:
        reps = [r for r in ln.get("reads", []) if r.get("concurrency") == 1]
        if len(reps) > 2:
            seq = ", ".join(f"{r['client']} {r['tpot_ms']:.3f}" if r.get("tpot_ms") else
                            f"{r['client']} –" for r in reps)  # fmt: skip
            lines.append(f"\nrepeats on launch {ln['index']} ({ln['config']}), in order: {seq}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", type=Path)
    ap.add_argument("--name", default="vllm-h200", help="the store's campaign for the reads")
    ap.add_argument("--db", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--tokenizer")
    ap.add_argument("--engine", default="vllm")
    ap.add_argument("--served", default=MODEL_NAME, help="the served model's name")
    ap.add_argument("--order", default="baseline,A")
    ap.add_argument("--port", type=int, default=8431, help="the first config's port")
    ap.add_argument("--hi", type=int, default=32, help="inferlab's higher point (0: none)")
    ap.add_argument("--repeats-on", type=int, default=-1, help="which launch of --order")
    ap.add_argument("--repeats", type=int, default=0)
    ap.add_argument("--no-vllm", dest="vllm", action="store_false", help="inferlab's reads only")
    ap.add_argument("--deadline-s", type=float, default=500.0)
    ap.add_argument("--summarize", type=Path, nargs="+", help="ab.json files: print the table")
    a = ap.parse_args()
    if a.summarize:
        print(summarize(a.summarize))
        return 0
    if not (a.campaign and a.db and a.out and a.tokenizer):
        ap.error("--campaign, --db, --out and --tokenizer are needed to measure")
    return measure(a)


if __name__ == "__main__":
    sys.exit(main())
