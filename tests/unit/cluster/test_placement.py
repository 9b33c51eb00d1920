"""Placement, no Ray started (``cluster.placement``): bundles and the fit check name the
config and the largest node."""

from __future__ import annotations

import pytest

from inferlab.cluster.connect import NodeInfo
from inferlab.cluster.placement import Need, check_fit, config_need, fits_at_once
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


def test_how_many_configs_the_nodes_hold_side_by_side() -> None:
    """The test cluster's shape: a 1-CPU head, two nodes of 2 CPUs and 2 GPUs, a client node."""
    nodes = [
        NodeInfo("h" * 40, "10.0.0.1", "head", 1, 0),
        NodeInfo("a" * 40, "10.0.0.2", "g1", 2, 2),
        NodeInfo("b" * 40, "10.0.0.3", "g2", 2, 2),
        NodeInfo("c" * 40, "10.0.0.4", "client", 1, 0),
    ]
    assert fits_at_once(Need("one", 1, 0.5, 0.5), nodes) == 4  # by GPUs and CPUs alike
    assert fits_at_once(Need("two", 2, 0.5, 0.5), nodes) == 2  # a node's GPUs each
    assert fits_at_once(Need("cpu", 0, 0.5, 0.5), nodes) == 6  # no GPU: the CPUs decide
    assert fits_at_once(Need("fat", 1, 1, 1.5), nodes) == 0  # 2.5 CPUs: no node has them
