"""Teacher-forced logprobs on a real llama.cpp ``llama-server`` (issue 31): the gate of the
llamacpp engine spec (``stepwise-ids``) run against llama.cpp itself.

1. Builds ``llama-server`` only, once, from the llama.cpp vendored in llama-cpp-python's sdist
   (``vendor/llama.cpp``), into ``$INFERLAB_CACHE`` (``~/.cache/inferlab``) ``/llama.cpp-lcp<version>/`` (cached; ``nice
   -n 19``, ``-j2``; ``GGML_NATIVE=ON``, no curl, tests or examples).
2. Makes the tiny random-weight Llama (``inferlab model tiny``) and writes it as GGUF (f32)
   with the vendored ``gguf-py``'s ``GGUFWriter`` — the tensor names, the Q/K RoPE permutation
   and the byte-level BPE vocabulary as ``convert_hf_to_gguf.py``'s ``LlamaModel`` writes them;
   that script itself needs torch and transformers, which this needs not.
3. Serves it on loopback, builds the reference (greedy continuations, then each position
   teacher forced, one ``max_tokens = 1`` request per position) and measures the same server
   against it: KL 0 and top-1 100% expected. Also compares each teacher-forced position with
   the greedy answer's own top-k at that position (the same context, computed in one decode).
4. ``--record DIR``: saves real answers as test fixtures (tests/fixtures/llamacpp/).

    python benchmarks/llamacpp_check.py [--sdist PATH] [--prompts 64] [--tokens 32] [--record DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from inferlab.config.campaign import VerifySection
from inferlab.config.lossy import LossyGate
from inferlab.engines import get_engine
from inferlab.envs.venv import cache_root
from inferlab.load.http import Endpoint, HttpClient, run_loop
from inferlab.server.lifecycle import LaunchSpec, free_port, launch, stop, wait_ready
from inferlab.verify import verify_endpoint
from inferlab.verify.gate import AgreementTask
from inferlab.verify.logprobs import LogprobReference, NoLogprobs, generated_entries
from inferlab.verify.scorers import score_stepwise

VERSION = "0.3.36"
CACHE = cache_root() / f"llama.cpp-lcp{VERSION}"
SDIST = Path("/tmp/lcp-src") / f"llama_cpp_python-{VERSION}.tar.gz"
CMAKE = ["-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF"]
CMAKE += ["-DLLAMA_BUILD_EXAMPLES=OFF", "-DCMAKE_BUILD_TYPE=Release"]


def ensure_server(sdist: Path) -> Path:
    """``llama-server``, built from the sdist's vendored llama.cpp unless already cached."""
    src = CACHE / "src"
    binary = src / "build" / "bin" / "llama-server"
    if binary.exists():
        return binary
    if not src.exists():
        if not sdist.exists():
            sdist.parent.mkdir(parents=True, exist_ok=True)
            get = [
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"llama-cpp-python=={VERSION}",
            ]
            subprocess.run([*get, "-d", str(sdist.parent)], check=True)
        top = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/"
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(top)]
            for m in members:
                m.name = m.name[len(top) :]
            tar.extractall(src, members=[m for m in members if m.name], filter="data")
    nice = ["nice", "-n", "19"]
    subprocess.run([*nice, "cmake", "-B", "build", *CMAKE], cwd=src, check=True)
    build = ["cmake", "--build", "build", "--target", "llama-server", "-j2"]
    subprocess.run([*nice, *build], cwd=src, check=True)
    return binary


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """``convert_hf_to_gguf``'s ``LlamaModel.permute``: HF's rotary halves to GGML's pairs."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def write_gguf(hf: Path, out: Path, kind: str = "f32") -> None:
    """The HF Llama at ``hf`` as a GGUF at ``out`` (vendored gguf-py): ``kind`` f32, f16 or
    q8_0 for the 2-D weights (1-D norms stay f32, as the converter keeps them)."""
    sys.path.insert(0, str(CACHE / "src" / "gguf-py"))
    import gguf
    from safetensors.numpy import load_file

    cfg = json.loads((hf / "config.json").read_text())
    nh, nkv, nl = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"]
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_name("inferlab-tiny")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(nl)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    ftype = {"f32": "ALL_F32", "f16": "MOSTLY_F16", "q8_0": "MOSTLY_Q8_0"}[kind]
    w.add_file_type(getattr(gguf.LlamaFileType, ftype))
    _vocab(w, gguf, hf, cfg["vocab_size"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, nl)
    for name, t in load_file(str(hf / "model.safetensors")).items():
        if name.endswith("q_proj.weight"):
            t = _permute(t, nh)
        elif name.endswith("k_proj.weight"):
            t = _permute(t, nkv)
        gname = names.get_name(name, try_suffixes=(".weight", ".bias"))
        t = t.astype(np.float32)
        if t.ndim == 2 and kind == "f16":
            t = t.astype(np.float16)
        elif t.ndim == 2 and kind == "q8_0":
            q8 = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(gname, gguf.quants.quantize(t, q8), raw_dtype=q8)
            continue
        w.add_tensor(gname, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _vocab(w: Any, gguf: Any, hf: Path, size: int) -> None:
    """The byte-level BPE vocabulary as ``_set_vocab_gpt2`` writes it (pre-tokenizer gpt-2)."""
    tok = json.loads((hf / "tokenizer.json").read_text())
    rev = {i: t for t, i in tok["model"]["vocab"].items()}
    special = {a["id"] for a in tok["added_tokens"] if a.get("special")}
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list([rev.get(i, f"[PAD{i}]") for i in range(size)])
    types = gguf.TokenType
    w.add_token_types([types.CONTROL if i in special else types.NORMAL for i in range(size)])
    gguf.SpecialVocab(str(hf), load_merges=True, n_vocab=size).add_to_gguf(w)


@contextlib.contextmanager
def serving(binary: Path, model: Path, log: Path) -> Iterator[str]:
    """``llama-server`` on a free loopback port until the block ends, launched, waited for and
    stopped by inferlab's own server lifecycle; yields its URL."""
    port = free_port()
    argv = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["-c", "2048", "-t", "1", "-np", "1", "--no-webui"]
    url = f"http://127.0.0.1:{port}"
    spec = LaunchSpec("llama-server", argv, {}, port, log, url + "/health", ready_timeout_s=120)
    server = launch(spec)
    try:
        wait_ready(server)
        yield url
    finally:
        stop(server, drain_timeout_s=10)


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One ``POST /v1/completions``: its status and JSON answer."""
    req = urllib.request.Request(
        url + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _spec_section() -> tuple[Any, VerifySection]:
    return get_engine("llamacpp"), VerifySection(probes=[], length_tokens=2)


def reference(url: str, limits: LossyGate) -> LogprobReference:
    """The reference built on ``url`` with the llamacpp spec's scorer (``stepwise-ids``)."""
    spec, section = _spec_section()
    rep = verify_endpoint(url, model="tiny", engine=spec, section=section,
                          agreement=AgreementTask(limits, None, gating=False))  # fmt: skip
    if rep.logprobs is None:
        raise RuntimeError(f"no reference: {rep.summary()}")
    return rep.logprobs


def measure(url: str, ref: LogprobReference, limits: LossyGate) -> Any:
    """``url`` measured against ``ref``: the agreement check."""
    spec, section = _spec_section()
    rep = verify_endpoint(url, model="tiny", engine=spec, section=section,
                          agreement=AgreementTask(limits, ref, gating=True))  # fmt: skip
    return next(c for c in rep.checks if c.kind == "agreement")


def text_stepwise_refusals(url: str, ref: LogprobReference) -> int:
    """How many prompts the text ``stepwise`` scorer refuses on llama.cpp (a text prefix that
    re-tokenizes across a generated token's boundary)."""

    async def go() -> int:
        client = HttpClient(Endpoint.parse(url), timeout_s=60)
        n = 0
        try:
            for i, p in enumerate(ref.prompts):
                try:
                    await score_stepwise(client, "tiny", p, ref.forced(i), ref.top_k)
                except NoLogprobs:
                    n += 1
        finally:
            client.close()
        return n

    return run_loop(go())


def against_decode(url: str, ref: LogprobReference, n: int) -> float:
    """The largest |Δ logprob| between a teacher-forced position and the greedy answer's own
    top-k at that position (one decode, ``logprobs = k``), over ``n`` prompts."""
    worst = 0.0
    for i in range(n):
        body = {"model": "tiny", "prompt": ref.prompts[i], "max_tokens": ref.tokens,
                "temperature": 0.0, "logprobs": ref.top_k}  # fmt: skip
        entries = generated_entries(post(url, body)[1]["choices"][0])
        for (_, top), forced in zip(entries, ref.positions[i], strict=True):
            assert top is not None and top.keys() == forced.keys(), (top, forced)
            worst = max(worst, max(abs(top[t] - forced[t]) for t in top))
    return worst


def record(url: str, ref: LogprobReference, out: Path) -> None:
    """Real answers, saved as fixtures: each file ``{"request", "status", "response"}``."""
    out.mkdir(parents=True, exist_ok=True)
    ids = (ref.token_ids or [None])[0] or []
    bodies = {
        "step_logprobs": {"prompt": ref.prompts[0], "max_tokens": 1, "logprobs": 5},
        "step_mixed_prompt": {"prompt": [ref.prompts[0], *ids[:3]], "max_tokens": 1, "logprobs": 5},
        "greedy_logprobs": {"prompt": ref.prompts[0], "max_tokens": 4, "logprobs": 1},
        "echo": {"prompt": ref.prompts[0] + ref.continuations[0], "max_tokens": 0, "echo": True,
                 "logprobs": 5},
    }  # fmt: skip
    for name, b in bodies.items():
        b = {"model": "tiny", "temperature": 0.0, **b}
        status, answer = post(url, b)
        for volatile in ("created", "id", "system_fingerprint"):
            answer.pop(volatile, None)
        (out / f"{name}.json").write_text(
            json.dumps({"request": b, "status": status, "response": answer}, indent=1) + "\n"
        )


def run_all(binary: Path, work: Path, limits: LossyGate, rec: Path | None) -> dict[str, Any]:
    """The f32 server gated against itself, then the f16 and q8_0 GGUFs against it."""
    out: dict[str, Any] = {}
    with serving(binary, work / "tiny-f32.gguf", work / "llama-server.log") as url:
        t0 = time.monotonic()
        ref = reference(url, limits)
        same = measure(url, ref, limits)
        out["f32 vs itself"] = same.message
        out["seconds (reference + measure)"] = round(time.monotonic() - t0, 1)
        out["reference requests"] = len(ref.prompts) * (1 + ref.tokens)
        out["max |Δ logprob| teacher-forced vs decode"] = against_decode(url, ref, 4)
        out["prompts the text stepwise scorer refuses"] = text_stepwise_refusals(url, ref)
        if rec is not None:
            record(url, ref, rec)
    for kind in ("f16", "q8_0"):
        with serving(binary, work / f"tiny-{kind}.gguf", work / f"llama-server-{kind}.log") as url:
            check = measure(url, ref, limits)
            out[f"{kind} vs f32"] = f"{check.detail['verdict']}: {check.message}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", type=Path, default=SDIST)
    ap.add_argument("--prompts", type=int, default=64, help="max_prompts (16 looked at first)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--record", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.monotonic()
    binary = ensure_server(args.sdist)
    print(f"llama-server: {binary} (ready in {time.monotonic() - t0:.0f} s)", flush=True)
    work = CACHE / "tiny"
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "inferlab.cli.main", "model", "tiny", str(work / "hf")],
                   check=True, env={**os.environ})  # fmt: skip
    for kind in ("f32", "f16", "q8_0"):
        write_gguf(work / "hf", work / f"tiny-{kind}.gguf", kind)
    limits = LossyGate(max_prompts=args.prompts, tokens=args.tokens)  # the gate's defaults
    figs = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "llama.cpp": f"vendored in llama-cpp-python {VERSION}",
        **run_all(binary, work, limits, args.record),
    }
    print(json.dumps(figs, indent=1))


if __name__ == "__main__":
    main()
