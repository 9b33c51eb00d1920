"""How configs map to a Ray cluster's GPUs (pure: no Ray here).

Each config gets one placement group, ``STRICT_PACK`` (both bundles on one node):
bundle 0 ``{"GPU": n, "CPU": server_cpus}`` for its server, bundle 1 ``{"CPU": client_cpus}``
for its load generator. ``n`` is ``[engine] gpus`` when given, else the engine's parallel flags
multiplied (tp × pp × dp, from the engine registry). A config no node can hold is named
before anything starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inferlab.cluster.connect import NodeInfo
from inferlab.config.campaign import ClusterSection
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import ConfigError

__all__ = ["Need", "check_fit", "config_need", "fits_at_once", "node_fits", "node_lost"]


@dataclass(frozen=True)
class Need:
    """What one config asks of one node: GPUs for its server, CPUs for server and client."""

    config: str
    gpus: int
    server_cpus: float
    client_cpus: float

    def bundles(self) -> list[dict[str, float]]:
        """The placement group's bundles: server (GPUs omitted when 0), then client."""
        server: dict[str, float] = {"CPU": self.server_cpus}
        if self.gpus:
            server = {"GPU": float(self.gpus), **server}
        return [server, {"CPU": self.client_cpus}]

    @property
    def cpus(self) -> float:
        return self.server_cpus + self.client_cpus

    def describe(self) -> str:
        return f"{self.gpus} GPU(s) and {self.cpus:g} CPU(s) on one node"


def config_need(cfg: ResolvedConfig, section: ClusterSection) -> Need:
    """The GPUs and CPUs ``cfg`` needs (``ConfigError`` for a bad parallel flag value)."""
    spec = get_engine(cfg.engine)
    try:
        gpus = cfg.gpus if cfg.gpus is not None else spec.gpus_needed(cfg.args)
    except ConfigError as exc:
        raise ConfigError(f"config {cfg.name!r}: {exc}") from None
    return Need(cfg.name, gpus, section.server_cpus, section.client_cpus)


def node_fits(need: Need, node: NodeInfo) -> bool:
    """Whether ``node``'s total resources can hold ``need`` (when nothing else runs)."""
    return node.gpus >= need.gpus and node.cpus >= need.cpus


def fits_at_once(need: Need, nodes: Sequence[NodeInfo]) -> int:
    """How many configs of ``need`` the ``nodes`` hold side by side (their total resources)."""
    total = 0
    for node in nodes:
        by_cpu = int(node.cpus // need.cpus) if need.cpus > 0 else 1 << 20
        by_gpu = int(node.gpus // need.gpus) if need.gpus > 0 else by_cpu
        total += min(by_cpu, by_gpu)
    return total


def check_fit(needs: Sequence[Need], nodes: Sequence[NodeInfo], where: str) -> None:
    """``ConfigError`` naming every config that no node can hold, with the largest node."""
    if not nodes:
        raise ConfigError(f"{where}: the Ray cluster has no alive node")
    bad = [n for n in needs if not any(node_fits(n, node) for node in nodes)]
    if not bad:
        return
    big = max(nodes, key=lambda x: (x.gpus, x.cpus))
    names = "; ".join(f"config {n.config!r} needs {n.describe()}" for n in bad)
    raise ConfigError(
        f"{where}: {names}; no node has that (the largest, {big.short}, has {big.gpus:g} "
        f"GPU(s) and {big.cpus:g} CPU(s)): lower the parallel flags or [engine] gpus, "
        "[cluster] server_cpus/client_cpus, or add a larger node"
    )


def node_lost(
    config: str,
    node: tuple[str, str] | None,
    todo: Sequence[tuple[str, int]],
    cause: str,
    hint: str,
) -> tuple[dict[str, Any], str]:
    """The ``node-lost`` finding of ``config`` whose node (id, hostname; None: not known yet)
    died with the ``todo`` cells unmeasured, and its outcome's message (``hint``: the resume
    command)."""
    where = f"{node[1]} (node {node[0][:8]})" if node else "its node"
    cells = ", ".join(f"{lb}#{t}" for lb, t in todo) or "none"
    finding = {
        "kind": "node-lost",
        "severity": "error",
        "message": f"{config}: {where} was lost: {len(todo)} unfinished cell(s) failed ({cells})",
        "evidence": {
            "node_id": node[0] if node else None,
            "cells": [list(c) for c in todo],
            "cause": cause,
        },
        "action": f"{hint} reruns them",
    }
    return finding, f"{where} was lost ({cause}); cells {cells} failed; {hint} reruns them"
