"""The ``[profile]`` section at plan time and the capture controller (``campaign.parts.capture``):
errors name the field, the plan says profiling is on, an absent endpoint is named."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.parts.capture import Controller
from inferlab.campaign.parts.collect import LocalFiles
from inferlab.campaign.parts.plan import make_plan, render_plan
from inferlab.config.campaign import ProfileSection
from inferlab.engines.capture import SGLANG_CAPTURE
from inferlab.errors import ConfigError
from support.campaign import write_campaign
from support.campaigns import capture


def write(tmp: Path, kind: str = "sim", url: str | None = None, **profile: Any) -> Path:
    """The profiled campaign (``support.campaigns.capture``); ``profile``: its ``[profile]``."""
    return write_campaign(tmp / "c.toml", **capture(kind, url, **profile))


def test_plan_time_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.toml:\d+: profile\.at: 'C=32' is not a load point"):
        make_plan(write(tmp_path, at=["C=1", "C=32"]))
    with pytest.raises(ConfigError, match=r"profile\.configs: no config 'B'"):
        make_plan(write(tmp_path, at=["C=16"], configs=["B"]))
    with pytest.raises(ConfigError, match=r"c\.toml:\d+: profile: .*'openai' has no capture"):
        make_plan(write(tmp_path, kind="openai", url="http://127.0.0.1:9"))
    with pytest.raises(ConfigError, match=r"inferlab profile TRACE --campaign cap --config"):
        make_plan(write(tmp_path, kind="openai", url="http://127.0.0.1:9"))


def test_plan_says_profiling_on(tmp_path: Path) -> None:
    text = "\n".join(render_plan(make_plan(write(tmp_path, at=["C=16"], configs=["A"]))))
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
