"""The ``command`` engine (``engines.command``): a command without a ``{port}`` placeholder
is a plan error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from inferlab.campaign.parts.plan import make_plan
from inferlab.errors import ConfigError
from support.campaign import CampaignToml
from support.campaigns import command


def test_command_without_port_placeholder_is_a_plan_error(
    campaign_toml: CampaignToml, tmp_path: Path
) -> None:
    spec = command(sys.executable, tmp_path)
    engine = spec["engine"]
    argv = [a for a in engine["argv"] if a not in ("--port", "{port}")]
    path = campaign_toml(**{**spec, "engine": {**engine, "argv": argv}})
    with pytest.raises(ConfigError, match=r"c.toml:\d+: engine.argv: no \{port\} placeholder"):
        make_plan(path)
    campaign_toml(**{**spec, "engine": {**engine, "api": "tgi"}})
    with pytest.raises(ConfigError, match=r"engine.api: 'tgi'; expected one of"):
        make_plan(path)
    campaign_toml(**{**spec, "engine": {**engine, "kind": "vllm"}})
    with pytest.raises(ConfigError, match=r"engine.argv: only for kind 'command'"):
        make_plan(path)
