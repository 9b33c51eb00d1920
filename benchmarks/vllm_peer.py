"""inferlab's client beside vLLM's own (`vllm bench serve`) on one vLLM server, same workload.

    python3 benchmarks/vllm_peer.py --model MODEL_DIR --out DIR [--concurrency 1,64,256]
    python3 benchmarks/vllm_peer.py --summarize DIR        # the table, from DIR/peer.json

Run on the lent H200 by ``scripts/h200_vllm.sh run peer``: it launches the baseline's server of
examples/vllm-h200.toml (``--linear-backend triton``, FLASH_ATTN, the same compilation config),
then at each concurrency runs `vllm bench serve` (random dataset, ``--ignore-eos``) and
`inferlab bench` (random prompts of exact length, fixed output) with the same input and output
lengths and request count, alternating which goes first. Each client is a child process whose
CPU time (user + system, its waited-for children included) comes from ``os.wait4``; output tokens
from each tool's own count. Everything raw lands in DIR/peer.json; ``--summarize`` prints TTFT,
TPOT and throughput from both and the client CPU seconds per 1,000 output tokens.
Definitions differ slightly (docs/peers.md): vLLM's TPOT is the mean over requests of
(E2E − TTFT)/(tokens − 1) and its throughput is tokens / benchmark duration; inferlab's are the
median over requests and tokens / measurement window.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

PORT = 8431
MODEL_NAME = "m1b"
IN_TOKENS, OUT_TOKENS = 128, 64
SERVER_ARGS = (
    "--served-model-name", MODEL_NAME, "--attention-backend", "FLASH_ATTN",
    "--linear-backend", "triton", "--max-model-len", "2048",
    "--compilation-config", '{"cudagraph_capture_sizes":[1,2,4,8,16,32,64,128,256,512]}',
    "--max-num-seqs", "256",
)  # fmt: skip


def requests_for(c: int) -> int:
    """Enough requests that the ramp-up is a small part of the point: 64 at C=1, 4×C above."""
    return max(64, 4 * c)


def _timed(argv: list[str], log: Path, stdout: Path | None = None) -> dict[str, Any]:
    """Run ``argv``; its wall time, CPU seconds (wait4) and exit status."""
    t0 = time.monotonic()
    with log.open("w") as f, (stdout or log).open("a") as o:
        p = subprocess.Popen(argv, stdout=o if stdout else f, stderr=f)
        _, status, ru = os.wait4(p.pid, 0)
    return {
        "argv": argv,
        "wall_s": time.monotonic() - t0,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "rc": os.waitstatus_to_exitcode(status),
        "log": log.name,
    }


def vllm_client(model: str, c: int, n: int, out: Path) -> dict[str, Any]:
    name = f"vllm-C{c}.json"
    argv = [sys.executable, "-m", "vllm.entrypoints.cli.main", "bench", "serve",
            "--backend", "vllm", "--base-url", f"http://127.0.0.1:{PORT}",
            "--endpoint", "/v1/completions", "--model", MODEL_NAME, "--tokenizer", model,
            "--dataset-name", "random", "--random-input-len", str(IN_TOKENS),
            "--random-output-len", str(OUT_TOKENS), "--ignore-eos", "--num-prompts", str(n),
            "--max-concurrency", str(c), "--percentile-metrics", "ttft,tpot,itl,e2el",
            "--num-warmups", "0", "--disable-tqdm", "--save-result", "--result-dir", str(out),
            "--result-filename", name]  # fmt: skip
    r = _timed(argv, out / f"vllm-C{c}.log")
    path = out / name
    r["result"] = json.loads(path.read_text()) if path.is_file() else None
    if r["result"] is not None:
        r["result"].pop("itls", None), r["result"].pop("ttfts", None)  # keep the file small
        r["result"].pop("input_lens", None), r["result"].pop("output_lens", None)
        r["result"].pop("generated_texts", None), r["result"].pop("errors", None)
    return r


def inferlab_client(model: str, c: int, n: int, out: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "inferlab", "bench", "--url", f"http://127.0.0.1:{PORT}",
            "--model", MODEL_NAME, "--engine", "vllm", "--tokenizer", model,
            "--concurrency", str(c), "--requests", str(n), "--input-tokens", str(IN_TOKENS),
            "--output-tokens", str(OUT_TOKENS), "--db", str(out / "peer-inferlab.db"),
            "--campaign", "peer", "--as", "baseline", "--format", "json"]  # fmt: skip
    js = out / f"inferlab-C{c}.json"
    r = _timed(argv, out / f"inferlab-C{c}.log", js)
    try:
        r["result"] = json.loads(js.read_text())
    except (OSError, ValueError):
        r["result"] = None
    return r


def _healthy(timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(1)
    return False


def measure(model: str, out: Path, conc: list[int]) -> dict[str, Any]:
    log = (out / "peer-server.log").open("w")
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
            "--host", "127.0.0.1", "--port", str(PORT), *SERVER_ARGS]  # fmt: skip
    t0 = time.monotonic()
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    runs: list[dict[str, Any]] = []
    doc: dict[str, Any] = {"server_argv": argv, "workload": [IN_TOKENS, OUT_TOKENS], "runs": runs}
    try:
        if not _healthy(420):
            doc["error"] = "server not healthy in 420 s (see peer-server.log)"
            return doc
        doc["ready_s"] = time.monotonic() - t0
        print(f"server ready in {doc['ready_s']:.0f} s", flush=True)
        for i, c in enumerate(conc):
            n = requests_for(c)
            order = (vllm_client, inferlab_client) if i % 2 == 0 else (inferlab_client, vllm_client)
            for fn in order:
                r = fn(model, c, n, out)
                r.update(client=fn.__name__.split("_")[0], concurrency=c, requests=n)
                runs.append(r)
                print(f"C={c} {r['client']}: rc {r['rc']}, {r['wall_s']:.1f} s wall, "
                      f"{r['cpu_s']:.1f} s CPU", flush=True)  # fmt: skip
                (out.parent / "peer.json").write_text(json.dumps(doc, indent=1))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
    return doc


def _inferlab_row(r: dict[str, Any]) -> dict[str, float] | None:
    pts = (r.get("result") or {}).get("points") or []
    if not pts:
        return None
    s = pts[0]["summary"]
    return {
        "ttft_p50": s["ttft_ms"]["p50"],
        "tpot_p50": s["tpot_ms"]["p50"],
        "tok_s": s["output_tok_s"],
        "tokens": s["output_tokens"],
    }


def _vllm_row(r: dict[str, Any]) -> dict[str, float] | None:
    v = r.get("result")
    if not v:
        return None
    return {
        "ttft_p50": v["median_ttft_ms"],
        "tpot_p50": v["median_tpot_ms"],
        "tok_s": v["output_throughput"],
        "tokens": v["total_output_tokens"],
    }


def summarize(path: Path) -> str:
    doc = json.loads(path.read_text())
    lines = [
        "| C | client | TTFT p50 (ms) | TPOT p50 (ms) | output tok/s | client CPU s / 1k tokens |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for r in doc["runs"]:
        row = (_vllm_row if r["client"] == "vllm" else _inferlab_row)(r)
        if row is None:
            lines.append(f"| {r['concurrency']} | {r['client']} | failed (rc {r['rc']}) | | | |")
            continue
        per_k = r["cpu_s"] / row["tokens"] * 1000 if row["tokens"] else float("nan")
        lines.append(
            f"| {r['concurrency']} | {r['client']} | {row['ttft_p50']:.2f} | {row['tpot_p50']:.3f} "
            f"| {row['tok_s']:,.0f} | {per_k:.3f} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--concurrency", default="1,64,256")
    ap.add_argument("--summarize", type=Path, help="a DIR with peer.json: print the table")
    a = ap.parse_args()
    if a.summarize:
        print(summarize(a.summarize / "peer.json"))
        return 0
    if not a.model or not a.out:
        ap.error("--model and --out are needed to measure (or --summarize DIR)")
    a.out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("H200_WORK", "/tmp/h200v")) / "peer"
    work.mkdir(parents=True, exist_ok=True)
    doc = measure(a.model, work, [int(x) for x in a.concurrency.split(",")])
    (a.out / "peer.json").write_text(json.dumps(doc, indent=1))
    subprocess.run(["tar", "-czf", str(a.out / "peer-logs.tgz"), "-C", str(work), "."], check=False)
    print(summarize(a.out / "peer.json") if doc.get("runs") else doc.get("error", "no runs"))
    return 0 if doc.get("runs") else 1


if __name__ == "__main__":
    sys.exit(main())
