"""Engine detection (``load.detect``) from what an engine says (a replayed server on
loopback): by its metrics and models, and a hint for a refused field."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.engines import get_engine
from inferlab.errors import ServerRejected
from inferlab.load.bench import run_bench
from inferlab.load.detect import detect_engine, unknown_field_hint
from inferlab.sim.tokenizer import WordTokenizer
from support import FIXTURES
from support.simproc import SimFactory

FIX = FIXTURES / "engine_logs" / "prometheus"


class _Replay(BaseHTTPRequestHandler):
    """Answers GETs from a table of (status, body) and refuses completions the way
    ``transformers serve`` refuses unknown fields (its source: HTTP 422, "Unexpected keys in
    the request: {...}")."""

    routes: dict[str, tuple[int, bytes]] = {}

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(*self.routes.get(self.path, (404, b'{"detail":"Not Found"}')))

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        extra = sorted(set(body) & {"ignore_eos", "min_tokens"})
        msg = "Unexpected keys in the request: {" + ", ".join(repr(k) for k in extra) + "}"
        self._send(422, json.dumps({"detail": msg}).encode())


@pytest.fixture
def replay() -> Iterator[tuple[str, type[_Replay]]]:
    class Handler(_Replay):
        routes: dict[str, tuple[int, bytes]] = {}

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", Handler
    finally:
        srv.shutdown()
        srv.server_close()


def test_detects_engines_by_their_metrics_and_models(replay: tuple[str, type[_Replay]]) -> None:
    url, h = replay
    sglang_metrics = (FIX / "sglang-docs-production_metrics_llama31-8b-full-dump.log").read_bytes()
    h.routes = {
        "/v1/models": (200, b'{"data": [{"id": "m", "owned_by": "sglang"}]}'),
        "/metrics": (200, sglang_metrics),
    }
    found = detect_engine(url)
    assert found.engine == "sglang" and "/metrics names sglang:*" in found.evidence, found
    vllm_metrics = (FIXTURES / "vllm_cpu/metrics.prom").read_bytes()
    h.routes = {"/v1/models": (200, b'{"data": []}'), "/metrics": (200, vllm_metrics)}
    assert detect_engine(url).engine == "vllm"
    h.routes = {"/v1/models": (200, b'{"data": [{"id": "m", "owned_by": "huggingface"}]}')}
    found = detect_engine(url)
    assert found.engine == "openai" and found.evidence == []
    assert "plain OpenAI fields" in found.sentence()


def test_a_refused_field_gets_a_hint(replay: tuple[str, type[_Replay]], tmp_path: Path) -> None:
    url, h = replay
    h.routes = {"/v1/models": (200, b'{"data": [{"id": "m", "owned_by": "x"}]}')}
    WordTokenizer(4096).save_hf(tmp_path / "tok")
    cfg = BenchConfig(
        url=url,
        model="m",
        engine="vllm",
        concurrency=[1],
        requests=2,
        workload=WorkloadSpec(input_tokens=4, output_tokens=4),
        tokenizer=tmp_path / "tok",
    )
    with pytest.raises(ServerRejected) as ei:
        run_bench(cfg)
    msg = str(ei.value)
    assert "HTTP 422" in msg and "Unexpected keys in the request" in msg
    assert "refuses 'ignore_eos', 'min_tokens'" in msg and "--engine openai" in msg
    assert unknown_field_hint("HTTP 400: bad temperature", get_engine("vllm")) is None


def test_detects_the_reference_engine(sim_server: SimFactory) -> None:
    sim = sim_server()
    found = detect_engine(sim.url)
    assert found.engine == "sim", found
    assert "/v1/models owned_by 'inferlab-sim'" in found.evidence
