"""The ``command`` engine (``engines.command``): a command without a ``{port}`` placeholder
is a plan error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from inferlab.campaign.runner import make_plan
from inferlab.errors import ConfigError

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
