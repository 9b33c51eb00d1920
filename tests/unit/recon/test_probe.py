"""Probing a Python (``recon.probe``): one without the engine is recorded, not raised."""

from __future__ import annotations

import json
import sys

import pytest

from inferlab.errors import ConfigError
from inferlab.recon.engines import engine_config_dirs
from inferlab.recon.probe import probe_python
from support.cli import Cli


def test_python_without_engine_is_recorded_not_raised(cli: Cli) -> None:
    info = probe_python(sys.executable)
    assert info.version == ".".join(map(str, sys.version_info[:3]))
    assert "vllm" not in info.packages and "sglang" not in info.packages
    with pytest.raises(ConfigError, match="--python: vllm is not installed in"):
        engine_config_dirs("vllm", sys.executable)
    with pytest.raises(ConfigError, match="--engine: unknown engine 'tgi'"):
        engine_config_dirs("tgi", sys.executable)
    p = cli("recon", "--python", sys.executable, "--format", "json")
    assert p.exit_code == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["python"]["executable"] == sys.executable
    assert data["engine"] is None
    assert any("none of vllm, sglang, transformers is installed" in e for e in data["errors"])
    p = cli("recon", "--engine", "sglang", "--python", sys.executable, "--format", "json")
    data = json.loads(p.stdout)
    assert any(f"sglang is not installed in {sys.executable}" in e for e in data["errors"])
