"""The ``[profile]`` section at plan time and the capture controller (``campaign.capture``):
errors name the field, the plan says profiling is on, an absent endpoint is named."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from inferlab.campaign.capture import Controller
from inferlab.campaign.collect import LocalFiles
from inferlab.campaign.runner import make_plan, render_plan
from inferlab.config.campaign import ProfileSection
from inferlab.engines.capture import SGLANG_CAPTURE
from inferlab.errors import ConfigError

CAMPAIGN = """
[campaign]
name = "cap"
output = "{out}"

[engine]
kind = "{kind}"
# --time-scale 0.1: a decode step at C=16 takes ~69 ms, so the batch stays at ~16 while the
# client's turnaround is under a step (its lag p99 on a busy 2-CPU machine: 1.5-2.5 ms); at
# 0.01 a step was ~7 ms and a loaded machine's turnaround let the batch sag (attention led)
args = ["--preset", "dsv4-flash-8gpu", "--time-scale", "0.1", "--tp-size", "2"]
{url}
ready_timeout_s = 30
stop_grace_s = 5

[[config]]
name = "baseline"

[[config]]
name = "A"
extends = "baseline"
args = ["--tuned-fp8"]
env = {{ NCCL_PROTO = "LL" }}

[verify]
enabled = false

[load]
workload = {{ kind = "random", input_tokens = 32, output_tokens = 24 }}
concurrency = [1, 16]
duration_s = 1.0

[profile]
{profile}
"""


def write(tmp: Path, profile: str = 'at = ["C=16"]', kind: str = "sim", url: str = "") -> Path:
    p = tmp / "c.toml"
    p.write_text(CAMPAIGN.format(out=tmp / "out", kind=kind, url=url, profile=profile))
    return p


def test_plan_time_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.toml:\d+: profile\.at: 'C=32' is not a load point"):
        make_plan(write(tmp_path, 'at = ["C=1", "C=32"]'))
    with pytest.raises(ConfigError, match=r"profile\.configs: no config 'B'"):
        make_plan(write(tmp_path, 'at = ["C=16"]\nconfigs = ["B"]'))
    with pytest.raises(ConfigError, match=r"c\.toml:\d+: profile: .*'openai' has no capture"):
        make_plan(write(tmp_path, kind="openai", url='url = "http://127.0.0.1:9"'))
    with pytest.raises(ConfigError, match=r"inferlab profile TRACE --campaign cap --config"):
        make_plan(write(tmp_path, kind="openai", url='url = "http://127.0.0.1:9"'))


def test_plan_says_profiling_on(tmp_path: Path) -> None:
    text = "\n".join(render_plan(make_plan(write(tmp_path, 'at = ["C=16"]\nconfigs = ["A"]'))))
    assert text.count("profiling on (SGLANG_TORCH_PROFILER_DIR=") == 1
    assert "vs baseline: + --tuned-fp8 (on); env NCCL_PROTO=LL; profiling on" in text
    assert not (tmp_path / "out").exists()  # a plan creates nothing


class _NoProfiling(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(404)
        self.end_headers()
        self.wfile.write(b'{"detail":"Not Found"}')

    def log_message(self, *args: object) -> None:
        pass


def test_an_absent_endpoint_is_named(tmp_path: Path) -> None:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoProfiling)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        ctl = Controller(
            SGLANG_CAPTURE, url, ProfileSection(at=["C=1"]), "p", str(tmp_path), LocalFiles(), 1
        )
        ctl.steady.set()
        ctl.run()
    finally:
        srv.shutdown()
        srv.server_close()
    assert ctl.error is not None and ctl.error.reason == "endpoint-absent"
    assert "/start_profile answered 404" in str(ctl.error)
