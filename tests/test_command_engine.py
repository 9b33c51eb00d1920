"""Any engine: a ``command`` campaign runs a server from its own argv through the whole
lifecycle; ``bench``/``verify`` without ``--engine`` detect the engine from what it says, send
engine-specific fields only to an engine known to take them, and explain a refusal that names
one of them."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from inferlab.campaign.runner import make_plan, render_plan, run_campaign
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.engines import get_engine
from inferlab.errors import ConfigError, ServerRejected
from inferlab.load.bench import run_bench
from inferlab.load.detect import detect_engine, unknown_field_hint
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support import FIXTURES
from support.cli import Cli, CliResult
from support.simproc import start_sim

FIX = FIXTURES / "engine_logs" / "prometheus"

CAMPAIGN = """
[campaign]
name = "cmd"
output = "{out}"

[engine]
kind = "command"
argv = ["{python}", "-m", "inferlab.cli.main", "sim", "serve", "--host", "{{host}}",
        "--port", "{{port}}", "--model", "{{model}}"]
args = ["--itl-ms", "2"]  # the levers: set/unset edit these, appended after argv
model = "served-by-a-command"
health = "/health"
metrics = "/metrics"
api = "openai"
ready_timeout_s = 30
stop_grace_s = 5

[[config]]
name = "baseline"

[[config]]
name = "slower"
extends = "baseline"
set = {{ "--itl-ms" = "4" }}

[verify]
probes = [{{ prompt = "hi", expect = '\\w', max_tokens = 4 }}]
length_tokens = 4

[load]
workload = {{ input_tokens = 8, output_tokens = 8 }}
concurrency = [1]
requests = 4
tokenizer = "{tok}"
"""


def test_command_campaign_runs_its_argv(tmp_path: Path) -> None:
    tok = tmp_path / "tok"
    WordTokenizer(4096).save_hf(tok)
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(out=tmp_path / "out", python=sys.executable, tok=tok))
    text = "\n".join(render_plan(make_plan(path)))
    assert "--port <free>" in text and "--model served-by-a-command" in text
    assert "vs baseline: ~ --itl-ms: 2 → 4" in text
    with Store(tmp_path / "db") as store:
        res = run_campaign(path, store=store)
        runs = store.runs(campaign="cmd")
        launch = store.latest_verification("cmd", "slower", "launch")
        stop = store.latest_verification("cmd", "slower", "stop")
        levers = store.latest_verification("cmd", "slower", "lever")
    why = [(o.config, o.status, o.message, o.log_tail[-5:]) for o in res.outcomes]
    assert {o.config: o.status for o in res.outcomes} == {
        "baseline": "measured",
        "slower": "measured",
    }, why
    assert {r.config for r in runs} == {"baseline", "slower"} and all(
        r.n_requests == 4 for r in runs
    )
    assert launch is not None and "served-by-a-command" in " ".join(launch["argv"])
    log = Path(launch["log_path"]).read_text()
    assert "inferlab sim (SIMULATED engine) listening on" in log
    assert stop is not None and stop["port_free"]
    # a command engine declares no evidence: the item is reported, and says so
    assert levers is not None and levers["items"][0]["status"] == "unknown"
    assert not list((tmp_path / "out" / ".running").glob("*.json"))


def test_command_without_port_placeholder_is_a_plan_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    body = CAMPAIGN.format(out=tmp_path / "out", python=sys.executable, tok=tmp_path)
    path.write_text(body.replace('"--port", "{port}", ', ""))
    with pytest.raises(ConfigError, match=r"c.toml:\d+: engine.argv: no \{port\} placeholder"):
        make_plan(path)
    path.write_text(body.replace('api = "openai"', 'api = "tgi"'))
    with pytest.raises(ConfigError, match=r"engine.api: 'tgi'; expected one of"):
        make_plan(path)
    path.write_text(body.replace('kind = "command"', 'kind = "vllm"'))
    with pytest.raises(ConfigError, match=r"engine.argv: only for kind 'command'"):
        make_plan(path)


# ------------------------------------------------------------------------- detection


def test_detects_the_reference_engine() -> None:
    with start_sim() as sim:
        found = detect_engine(sim.url)
    assert found.engine == "sim", found
    assert "/v1/models owned_by 'inferlab-sim'" in found.evidence


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


def test_verify_checks_a_running_configs_levers(cli: Cli, tmp_path: Path) -> None:
    camp = tmp_path / "c.toml"
    camp.write_text(
        f'[campaign]\nname = "v"\noutput = "{tmp_path}/out"\n[engine]\nkind = "sim"\n'
        '[[config]]\nname = "base"\n[[config]]\nname = "fast"\nargs = ["--itl-ms", "3"]\n'
        '[[config]]\nname = "slow"\nargs = ["--itl-ms", "9"]\n'
    )
    with start_sim("--itl-ms", "3") as sim:

        def verify(config: str) -> CliResult:
            return cli(
                "verify", "--url", sim.url, "--model", "inferlab-sim", "--levers",
                f"{camp}:{config}", "--log", sim._stderr_path, "--no-default-probes",
                env={"COLUMNS": "250"},
            )  # fmt: skip

        ok, bad = verify("fast"), verify("slow")
    assert ok.exit_code == 0, ok.stdout + ok.stderr
    assert "engine sim (/v1/models owned_by 'inferlab-sim'" in ok.stdout
    assert "fast: lever ✓ --itl-ms: applied — itl_ms=3.0 in /get_server_info" in ok.stdout
    assert bad.exit_code == 1 and "slow: lever ✗ --itl-ms: not-applied" in bad.stdout
