"""Placement, no Ray started (``cluster.placement``): bundles and the fit check name the
config and the largest node."""

from __future__ import annotations

import pytest

from inferlab.cluster.connect import NodeInfo
from inferlab.cluster.placement import Need, check_fit, config_need
from inferlab.config.campaign import ClusterSection
from inferlab.config.resolve import ResolvedConfig
from inferlab.errors import ConfigError


def _cfg(name: str, engine: str = "sglang", args: tuple[str, ...] = (), gpus: int | None = None):
    return ResolvedConfig(name, engine, "m", list(args), {}, [name], gpus=gpus)


def test_bundles_and_the_fit_check_name_the_config_and_the_largest_node() -> None:
    sec = ClusterSection(server_cpus=4, client_cpus=2)
    need = config_need(_cfg("big", args=("--tp", "16")), sec)
    assert need.bundles() == [{"GPU": 16.0, "CPU": 4.0}, {"CPU": 2.0}]
    assert config_need(_cfg("cpu", "sim"), sec).bundles() == [{"CPU": 4.0}, {"CPU": 2.0}]
    assert config_need(_cfg("forced", "sim", gpus=2), sec).gpus == 2
    nodes = [
        NodeInfo("a" * 40, "10.0.0.1", "gpu1", 64, 8),
        NodeInfo("b" * 40, "10.0.0.2", "c", 8, 0),
    ]
    check_fit([Need("ok", 8, 4, 2)], nodes, "c.toml")
    with pytest.raises(ConfigError) as exc:
        check_fit([need, Need("ok", 8, 4, 2)], nodes, "c.toml")
    msg = str(exc.value)
    assert "config 'big' needs 16 GPU(s) and 6 CPU(s) on one node" in msg and "'ok'" not in msg
    assert "gpu1 (aaaaaaaa), has 8 GPU(s) and 64 CPU(s)" in msg
