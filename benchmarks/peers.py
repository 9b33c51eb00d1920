"""Peer benchmark clients (SGLang, vLLM, AIPerf): reproducible install, scripted runs, parsed results.

Each peer lives in its own venv under ``~/.cache/inferlab/peers/<tool>-<version>/`` (override the
root with ``INFERLAB_PEERS_HOME``), installed from the exact pins in
``benchmarks/peers_requirements/`` with ``--no-deps`` (no resolution at install time, so pip never
pulls a CUDA torch). A marker file is written only after the install *and* a smoke test of the
tool's CLI succeed, so a half-finished install is wiped and redone on the next call.

Every run is offline apart from the server under test: the tokenizer is a local directory (a
per-peer copy of the one passed in), and Hugging Face / usage telemetry is switched off.

This module imports only the standard library; it runs under the project's venv python.

CLI::

    python benchmarks/peers.py setup [--tool sglang|vllm|aiperf]
    python benchmarks/peers.py run --tool vllm --url http://127.0.0.1:PORT --tokenizer /tmp/simtok \
        --concurrency 16 --requests 64 --input-tokens 128 --output-tokens 128
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PEERS", "PeerResult", "PeerSpec", "ensure_venv", "peers_home", "run_peer", "venv_dir"]

REQ_DIR = Path(__file__).resolve().parent / "peers_requirements"
MARKER = ".inferlab-peer-ok"
_TAIL = 4000  # characters of stderr/stdout kept in PeerResult.error


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class PeerSpec:
    """How to install and smoke-test one peer client."""

    name: str
    version: str
    # requirement files (in peers_requirements/), installed in order, each with --no-deps
    requirement_files: tuple[str, ...]
    # argv (relative to the venv's bin/, or a python -c) proving the CLI imports
    smoke: tuple[str, ...]
    # env vars set for every run of this tool (on top of the common offline env)
    env: tuple[tuple[str, str], ...] = ()
    description: str = ""


PEERS: dict[str, PeerSpec] = {
    "sglang": PeerSpec(
        name="sglang",
        version="0.5.23",
        requirement_files=("torch-cpu.txt", "sglang.txt"),
        smoke=("python", "{runner}", "--help"),
        env=(("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1")),
        description="python -m sglang.benchmark.serving (a.k.a. sglang.bench_serving)",
    ),
    "vllm": PeerSpec(
        name="vllm",
        version="0.33.0",
        requirement_files=("torch-cpu.txt", "vllm.txt"),
        smoke=("vllm", "bench", "serve", "--help"),
        env=(
            ("HF_HUB_OFFLINE", "1"),
            ("TRANSFORMERS_OFFLINE", "1"),
            ("VLLM_NO_USAGE_STATS", "1"),
            ("VLLM_TARGET_DEVICE", "cpu"),
        ),
        description="vllm bench serve",
    ),
    "aiperf": PeerSpec(
        name="aiperf",
        version="0.13.0",
        requirement_files=("aiperf.txt",),
        smoke=("aiperf", "--version"),
        # HF_HUB_OFFLINE deliberately NOT set (the brief: AIPerf + local tokenizer dir misbehaves)
        env=(("AIPERF_DISABLE_TELEMETRY", "1"),),
        description="aiperf profile",
    ),
}

_COMMON_ENV = {
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONUNBUFFERED": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}

# ``python -m sglang.benchmark.serving`` imports ``sglang.srt.disaggregation.utils`` for ONE string
# constant (FAKE_BOOTSTRAP_HOST, used only with --fake-prefill). That module drags in sglang's
# server runtime (torch.distributed, model configs, and torchvision, whose PyPI wheel needs a CUDA
# torch). This runner pre-registers a stub holding that constant (read from the installed source),
# then runs the benchmark module unchanged as __main__.
_SGLANG_RUNNER = '''\
"""Runs `python -m sglang.benchmark.serving` with sglang.srt.disaggregation.utils stubbed (inferlab)."""
import ast, importlib.util, pathlib, runpy, sys, types
_root = pathlib.Path(importlib.util.find_spec("sglang").origin).parent
_stub = types.ModuleType("sglang.srt.disaggregation.utils")
_stub.FAKE_BOOTSTRAP_HOST = "2.2.2.2"
_src = _root / "srt" / "disaggregation" / "utils.py"
if _src.exists():
    for _n in ast.parse(_src.read_text()).body:
        if isinstance(_n, ast.Assign) and any(
            getattr(t, "id", None) == "FAKE_BOOTSTRAP_HOST" for t in _n.targets
        ):
            _stub.FAKE_BOOTSTRAP_HOST = ast.literal_eval(_n.value)
sys.modules[_stub.__name__] = _stub
sys.argv = ["sglang.benchmark.serving", *sys.argv[1:]]
runpy.run_module("sglang.benchmark.serving", run_name="__main__", alter_sys=True)
'''
_SGLANG_RUNNER_NAME = "inferlab_sglang_bench.py"


# --------------------------------------------------------------------------- install


def peers_home() -> Path:
    return Path(os.environ.get("INFERLAB_PEERS_HOME", "~/.cache/inferlab/peers")).expanduser()


def venv_dir(name: str) -> Path:
    spec = PEERS[name]
    return peers_home() / f"{spec.name}-{spec.version}"


def _bin(venv: Path, exe: str) -> Path:
    return venv / "bin" / exe


def _requirements_digest(spec: PeerSpec) -> str:
    h = hashlib.sha256()
    for f in spec.requirement_files:
        h.update(f.encode())
        h.update((REQ_DIR / f).read_bytes())
    h.update(_SGLANG_RUNNER.encode() if spec.name == "sglang" else b"")
    return h.hexdigest()[:16]


def _read_marker(venv: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((venv / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _du(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def _smoke_argv(spec: PeerSpec, venv: Path) -> list[str]:
    argv = [a.format(runner=str(venv / _SGLANG_RUNNER_NAME)) for a in spec.smoke]
    argv[0] = str(_bin(venv, argv[0]))
    return argv


def _run_logged(argv: Sequence[str], log: Callable[[str], None], env: dict[str, str]) -> None:
    log("$ " + " ".join(argv))
    proc = subprocess.run(
        list(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"command failed (exit {proc.returncode}): {' '.join(argv)}\n{proc.stdout[-_TAIL:]}"
        )


def ensure_venv(name: str, log: Callable[[str], None] = print) -> Path:
    """Create (if missing or half-installed) the venv for peer ``name``; return its directory.

    Idempotent: a venv whose marker matches the pinned requirement files is returned at once.
    Raises ``RuntimeError`` with pip's output tail if the install or the smoke test fails.
    """
    if name not in PEERS:
        raise KeyError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
    spec = PEERS[name]
    venv = venv_dir(name)
    digest = _requirements_digest(spec)
    marker = _read_marker(venv)
    if marker is not None and marker.get("requirements_digest") == digest:
        return venv
    if venv.exists():
        log(f"[{name}] removing incomplete or outdated venv {venv}")
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    env = {**os.environ, **_COMMON_ENV}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    base_python: str = (
        os.environ.get("INFERLAB_PEERS_PYTHON")
        or str(getattr(sys, "_base_executable", ""))
        or sys.executable
    )
    _run_logged([base_python, "-m", "venv", str(venv)], log, env)
    pip = [str(_bin(venv, "python")), "-m", "pip", "install", "--no-deps", "--no-input"]
    constraints = REQ_DIR / "torch-cpu.txt"
    for req in spec.requirement_files:
        argv = [*pip, "-r", str(REQ_DIR / req)]
        if "torch-cpu.txt" in spec.requirement_files:
            argv += ["-c", str(constraints)]
        _run_logged(argv, log, env)
    if name == "sglang":
        (venv / _SGLANG_RUNNER_NAME).write_text(_SGLANG_RUNNER)
    smoke_env = {**env, **dict(spec.env)}
    _run_logged(_smoke_argv(spec, venv), log, smoke_env)
    seconds = time.monotonic() - t0
    size = _du(venv)
    info = {
        "tool": name,
        "version": spec.version,
        "requirements_digest": digest,
        "requirement_files": list(spec.requirement_files),
        "install_seconds": round(seconds, 1),
        "size_bytes": size,
        "python": sys.version.split()[0],
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (venv / MARKER).write_text(json.dumps(info, indent=2))
    log(f"[{name}] installed {spec.name}=={spec.version} in {seconds:.0f}s, {size / 2**30:.2f} GiB")
    return venv


# --------------------------------------------------------------------------- results


@dataclass
class PeerResult:
    tool: str
    version: str
    ok: int
    failed: int
    ttft_ms: list[float]  # one per successful request, as the tool measured it
    itl_ms: list[float]  # every inter-chunk gap of every successful request, concatenated
    wall_s: float
    argv: list[str]
    error: str | None
    # the tool's own summary numbers (mean/p99 TTFT and ITL, as the tool computes them)
    aggregates: dict[str, Any] | None = None
    # itl_ms grouped per request (same order as ttft_ms)
    itl_ms_per_request: list[list[float]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "version": self.version,
            "ok": self.ok,
            "failed": self.failed,
            "wall_s": round(self.wall_s, 2),
            "ttft_ms": _stats(self.ttft_ms),
            "itl_ms": _stats(self.itl_ms),
            "tool_reported": self.aggregates,
            "error": self.error,
        }


def _pct(sorted_xs: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    if not sorted_xs:
        return math.nan
    k = (len(sorted_xs) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (k - lo)


def _stats(xs: list[float]) -> dict[str, float]:
    s = sorted(xs)
    if not s:
        return {"n": 0}
    return {
        "n": len(s),
        "mean": round(sum(s) / len(s), 3),
        "p50": round(_pct(s, 50), 3),
        "p99": round(_pct(s, 99), 3),
        "max": round(s[-1], 3),
    }


# --------------------------------------------------------------------------- tokenizer


def prepare_tokenizer(src: Path, dst: Path, tool: str) -> Path:
    """Copy the HF tokenizer dir to ``dst`` and add what ``tool`` needs (the original is untouched).

    Added to every copy:
    * ``config.json`` with ``model_type: "gpt2"`` if absent: vLLM's bench (and
      ``transformers.AutoConfig``) otherwise logs 'Unrecognized model ... model_type' and sleeps
      through retries; the tokenizer class still comes from tokenizer_config.json.
    * a ``chat_template`` in tokenizer_config.json if absent (used only with --endpoint chat by
      clients that apply a template client-side): messages' contents joined by spaces.
    """
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    cfg = dst / "config.json"
    if not cfg.exists():
        cfg.write_text(json.dumps({"model_type": "gpt2", "vocab_size": _vocab_size(dst)}, indent=2))
    tc_path = dst / "tokenizer_config.json"
    try:
        tc = json.loads(tc_path.read_text())
    except (OSError, ValueError):
        tc = {}
    if "chat_template" not in tc:
        tc["chat_template"] = (
            "{% for m in messages %}{{ m['content'] }}{% if not loop.last %} {% endif %}"
            "{% endfor %}"
        )
        tc_path.write_text(json.dumps(tc, indent=2))
    return dst


def _vocab_size(d: Path) -> int:
    try:
        tok = json.loads((d / "tokenizer.json").read_text())
        return len(tok["model"]["vocab"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


# --------------------------------------------------------------------------- argv per tool


def _argv_vllm(
    venv: Path,
    *,
    url: str,
    model: str,
    tok: Path,
    c: int,
    n: int,
    isl: int,
    osl: int,
    out: Path,
    endpoint: str,
    seed: int,
) -> list[str]:
    chat = endpoint == "chat"
    return [
        str(_bin(venv, "vllm")),
        "bench",
        "serve",
        "--backend",
        "openai-chat" if chat else "openai",
        "--base-url",
        url.rstrip("/"),
        "--endpoint",
        "/v1/chat/completions" if chat else "/v1/completions",
        "--model",
        model,
        "--tokenizer",
        str(tok),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(isl),
        "--random-output-len",
        str(osl),
        "--random-range-ratio",
        "0",
        "--ignore-eos",
        "--max-concurrency",
        str(c),
        "--num-prompts",
        str(n),
        "--request-rate",
        "inf",
        "--num-warmups",
        "0",
        "--ready-check-timeout-sec",
        "0",
        "--seed",
        str(seed),
        "--disable-tqdm",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,99",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        str(out.parent),
        "--result-filename",
        out.name,
    ]


def _argv_sglang(
    venv: Path,
    *,
    url: str,
    model: str,
    tok: Path,
    c: int,
    n: int,
    isl: int,
    osl: int,
    out: Path,
    endpoint: str,
    seed: int,
) -> list[str]:
    chat = endpoint == "chat"
    return [
        str(_bin(venv, "python")),
        str(venv / _SGLANG_RUNNER_NAME),
        # 'vllm'/'vllm-chat' use the same OpenAI request functions as 'sglang-oai'/'-chat' but skip
        # SGLang-server-only extras (GET /server_info, cache flush under SGLANG_IS_IN_CI)
        "--backend",
        "vllm-chat" if chat else "vllm",
        "--base-url",
        url.rstrip("/"),
        "--model",
        model,
        "--tokenizer",
        str(tok),
        "--dataset-name",
        "random-ids",
        "--random-input-len",
        str(isl),
        "--random-output-len",
        str(osl),
        "--random-range-ratio",
        "1.0",  # sglang: lengths ~ U[int(len*ratio), len] -> fixed
        "--max-concurrency",
        str(c),
        "--num-prompts",
        str(n),
        "--request-rate",
        "inf",
        "--warmup-requests",
        "0",
        "--ready-check-timeout-sec",
        "0",
        "--seed",
        str(seed),
        "--output-file",
        str(out),
        "--output-details",
    ]


def _argv_aiperf(
    venv: Path,
    *,
    url: str,
    model: str,
    tok: Path,
    c: int,
    n: int,
    isl: int,
    osl: int,
    out: Path,
    endpoint: str,
    seed: int,
) -> list[str]:
    chat = endpoint == "chat"
    argv = [
        str(_bin(venv, "aiperf")),
        "profile",
        "--model-names",
        model,
        "--url",
        url.rstrip("/"),
        "--endpoint-type",
        "chat" if chat else "completions",
        "--streaming",
        "--tokenizer",
        str(tok),
        "--concurrency",
        str(c),
        "--request-count",
        str(n),
        "--isl",
        str(isl),
        "--isl-stddev",
        "0",
        "--osl",
        str(osl),
        "--osl-stddev",
        "0",
        "--extra-inputs",
        "ignore_eos:true",
        "--extra-inputs",
        f"min_tokens:{osl}",
        "--prompt-corpus",
        "random",  # prompt words drawn from the tokenizer's vocab
        "--random-seed",
        str(seed),
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--ui-type",
        "none",
        "--artifact-dir",
        str(out),
    ]
    if not chat:
        # vLLM's /v1/completions takes max_tokens; AIPerf defaults to max_completion_tokens
        argv.append("--use-legacy-max-tokens")
    return argv


_ARGV = {"vllm": _argv_vllm, "sglang": _argv_sglang, "aiperf": _argv_aiperf}


# --------------------------------------------------------------------------- parsers


def _parse_vllm_or_sglang(d: dict[str, Any]) -> tuple[list[float], list[list[float]], int, int]:
    ttfts = d.get("ttfts") or []
    itls = d.get("itls") or []
    errors = d.get("errors") or [""] * len(ttfts)
    ttft_ms: list[float] = []
    per_req: list[list[float]] = []
    failed = 0
    for i, t in enumerate(ttfts):
        err = errors[i] if i < len(errors) else ""
        if err or t is None:
            failed += 1
            continue
        ttft_ms.append(float(t) * 1000.0)
        per_req.append([float(x) * 1000.0 for x in (itls[i] if i < len(itls) else [])])
    return ttft_ms, per_req, len(ttft_ms), failed


def _agg_from_keys(d: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "mean_ttft_ms",
        "median_ttft_ms",
        "p99_ttft_ms",
        "mean_itl_ms",
        "median_itl_ms",
        "p99_itl_ms",
        "mean_tpot_ms",
        "p99_tpot_ms",
        "completed",
        "failed",
        "duration",
        "total_input_tokens",
        "total_output_tokens",
    )
    return {k: d[k] for k in keys if k in d}


def _parse_vllm(out: Path) -> tuple[list[float], list[list[float]], int, int, dict[str, Any]]:
    d = json.loads(out.read_text())
    ttft, per_req, ok, failed = _parse_vllm_or_sglang(d)
    if "failed" in d:
        failed = max(failed, int(d["failed"]))
    return ttft, per_req, ok, failed, _agg_from_keys(d)


def _parse_sglang(out: Path) -> tuple[list[float], list[list[float]], int, int, dict[str, Any]]:
    lines = [ln for ln in out.read_text().splitlines() if ln.strip()]
    d = json.loads(lines[-1])  # the tool appends one JSON line per run
    ttft, per_req, ok, failed = _parse_vllm_or_sglang(d)
    return ttft, per_req, ok, failed, _agg_from_keys(d)


def _parse_aiperf(out: Path) -> tuple[list[float], list[list[float]], int, int, dict[str, Any]]:
    records = out / "profile_export.jsonl"
    ttft_ms: list[float] = []
    per_req: list[list[float]] = []
    failed = 0
    for line in records.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        meta = rec.get("metadata") or {}
        if meta.get("benchmark_phase", "profiling") != "profiling":
            continue
        m = rec.get("metrics") or {}
        ttft = (m.get("time_to_first_token") or {}).get("value")
        if rec.get("error") or meta.get("was_cancelled") or ttft is None:
            failed += 1
            continue
        ttft_ms.append(float(ttft))
        icl = (m.get("inter_chunk_latency") or {}).get("value") or []
        per_req.append([float(x) for x in icl])
    agg: dict[str, Any] = {}
    summary = out / "profile_export_aiperf.json"
    if summary.exists():
        s = json.loads(summary.read_text())
        for key in ("time_to_first_token", "inter_token_latency", "inter_chunk_latency"):
            if isinstance(s.get(key), dict):
                agg[key] = {k: s[key].get(k) for k in ("avg", "p50", "p99", "count", "unit")}
        for key in (
            "request_count",
            "completed_request_count",
            "benchmark_duration",
            "error_summary",
        ):
            if key in s:
                agg[key] = s[key]
    return ttft_ms, per_req, len(ttft_ms), failed, agg


_PARSE = {"vllm": _parse_vllm, "sglang": _parse_sglang, "aiperf": _parse_aiperf}


# --------------------------------------------------------------------------- run


def run_peer(
    name: str,
    *,
    url: str,
    model: str,
    tokenizer_dir: Path,
    concurrency: int,
    num_requests: int,
    input_tokens: int,
    output_tokens: int,
    workdir: Path,
    timeout_s: float = 600,
    endpoint: str = "completions",
    seed: int = 0,
    install: bool = True,
) -> PeerResult:
    """Run one peer client against ``url`` and return its per-request measurements.

    ``endpoint`` is ``"completions"`` (``/v1/completions``) or ``"chat"``
    (``/v1/chat/completions``). Never raises for a tool failure: ``PeerResult.error`` carries the
    reason and the output tail. Every request the tool sends is a measured one (warmups and
    readiness probes are switched off), so the server's ground truth holds exactly
    ``num_requests`` requests from this run.
    """
    spec = PEERS[name]
    if endpoint not in ("completions", "chat"):
        raise ValueError("endpoint must be 'completions' or 'chat'")
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    argv: list[str] = []
    t0 = time.monotonic()

    def fail(msg: str) -> PeerResult:
        return PeerResult(
            spec.name, spec.version, 0, num_requests, [], [], time.monotonic() - t0, argv, msg
        )

    try:
        venv = ensure_venv(name, log=lambda s: None) if install else venv_dir(name)
    except Exception as exc:  # install problems are reported, never raised
        return fail(f"install failed: {exc}"[-_TAIL:])
    tok = prepare_tokenizer(Path(tokenizer_dir), workdir / f"tokenizer-{name}", name)
    out = (
        workdir
        / {
            "vllm": "vllm_result.json",
            "sglang": "sglang_result.jsonl",
            "aiperf": "aiperf_artifacts",
        }[name]
    )
    if out.is_dir():
        shutil.rmtree(out)
    elif out.exists():
        out.unlink()
    argv = _ARGV[name](
        venv,
        url=url,
        model=model,
        tok=tok,
        c=concurrency,
        n=num_requests,
        isl=input_tokens,
        osl=output_tokens,
        out=out,
        endpoint=endpoint,
        seed=seed,
    )
    env = {**os.environ, **_COMMON_ENV, **dict(spec.env), "HF_HOME": str(workdir / "hf_home")}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    if name == "aiperf":
        env.pop("HF_HUB_OFFLINE", None)
        env.pop("TRANSFORMERS_OFFLINE", None)
    stdout_path = workdir / f"{name}.stdout.txt"
    stderr_path = workdir / f"{name}.stderr.txt"
    t0 = time.monotonic()
    with stdout_path.open("w") as so, stderr_path.open("w") as se:
        try:
            proc = subprocess.run(
                argv,
                cwd=workdir,
                env=env,
                stdout=so,
                stderr=se,
                stdin=subprocess.DEVNULL,
                timeout=timeout_s,
            )
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
    wall = time.monotonic() - t0

    def tail() -> str:
        parts = []
        for p in (stderr_path, stdout_path):
            try:
                txt = p.read_text(errors="replace")
            except OSError:
                txt = ""
            if txt.strip():
                parts.append(f"--- {p.name} (tail) ---\n{txt[-_TAIL // 2 :]}")
        return "\n".join(parts)

    if rc is None:
        res = fail(f"timed out after {timeout_s:.0f}s\n{tail()}")
        res.wall_s = wall
        return res
    try:
        ttft, per_req, ok, failed, agg = _PARSE[name](out)
    except Exception as exc:
        res = fail(f"exit code {rc}; could not parse {out.name}: {exc!r}\n{tail()}")
        res.wall_s = wall
        return res
    error = None
    if rc != 0:
        error = f"exit code {rc}\n{tail()}"
    elif ok == 0:
        error = f"no successful request\n{tail()}"
    itl = [x for r in per_req for x in r]
    return PeerResult(
        spec.name,
        spec.version,
        ok,
        failed,
        ttft,
        itl,
        wall,
        argv,
        error,
        aggregates=agg,
        itl_ms_per_request=per_req,
    )


# --------------------------------------------------------------------------- CLI


def _main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="peers.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("setup", help="install peer venvs (idempotent)")
    s.add_argument(
        "--tool", choices=sorted(PEERS), action="append", help="repeatable; default: all"
    )
    r = sub.add_parser("run", help="run one peer against a server and print a summary")
    r.add_argument("--tool", choices=sorted(PEERS), required=True)
    r.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    r.add_argument("--model", default="inferlab-sim")
    r.add_argument(
        "--tokenizer",
        type=Path,
        default=None,
        help="HF tokenizer dir (default: write inferlab's WordTokenizer to workdir)",
    )
    r.add_argument("--concurrency", type=int, default=16)
    r.add_argument("--requests", type=int, default=64)
    r.add_argument("--input-tokens", type=int, default=128)
    r.add_argument("--output-tokens", type=int, default=128)
    r.add_argument("--endpoint", choices=("completions", "chat"), default="completions")
    r.add_argument("--workdir", type=Path, default=None)
    r.add_argument("--timeout", type=float, default=600)
    r.add_argument("--json", action="store_true", help="print the full PeerResult as JSON")
    sub.add_parser("list", help="show pinned versions and install state")
    args = ap.parse_args(argv)

    if args.cmd == "list":
        for name, spec in PEERS.items():
            m = _read_marker(venv_dir(name))
            state = (
                f"installed ({m['install_seconds']}s, {m['size_bytes'] / 2**30:.2f} GiB)"
                if m
                else "not installed"
            )
            print(f"{name:7s} {spec.version:8s} {venv_dir(name)}  {state}")
        return 0
    if args.cmd == "setup":
        rc = 0
        for name in args.tool or list(PEERS):
            try:
                v = ensure_venv(name)
                m = _read_marker(v) or {}
                print(
                    f"[{name}] ready: {v} (install {m.get('install_seconds')}s, "
                    f"{(m.get('size_bytes') or 0) / 2**30:.2f} GiB)"
                )
            except Exception as exc:
                print(f"[{name}] FAILED: {exc}", file=sys.stderr)
                rc = 1
        return rc

    workdir = (
        args.workdir or Path.cwd() / "peer-runs" / f"{args.tool}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    tok = args.tokenizer
    if tok is None:
        tok = workdir / "tokenizer-src"
        code = "import sys; from inferlab.sim.tokenizer import WordTokenizer; WordTokenizer().save_hf(sys.argv[1])"
        subprocess.run([sys.executable, "-c", code, str(tok)], check=True)
    res = run_peer(
        args.tool,
        url=args.url,
        model=args.model,
        tokenizer_dir=tok,
        concurrency=args.concurrency,
        num_requests=args.requests,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        workdir=workdir,
        timeout_s=args.timeout,
        endpoint=args.endpoint,
    )
    if args.json:
        print(json.dumps(asdict(res), indent=2))
    else:
        print(json.dumps(res.summary(), indent=2))
        print("argv: " + " ".join(res.argv))
        print(f"workdir: {workdir}")
    return 0 if res.error is None else 1


if __name__ == "__main__":
    sys.exit(_main())
