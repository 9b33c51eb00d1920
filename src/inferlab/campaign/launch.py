"""Launching one campaign config: its argv, its health URL, its orphan record, its store row.

``launch_config`` starts the server (``inferlab.server``), records it against orphans
(``campaign.orphans``) as soon as the process exists, and waits until it is ready, failing fast
on the engine's fatal log signatures; a launch that fails or is interrupted is stopped and its
record dropped.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inferlab.campaign import files as lever_files
from inferlab.campaign import orphans
from inferlab.campaign.cpus import CpuSplit
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import EngineSpec, get_engine
from inferlab.engines.base import classify_log
from inferlab.engines.logs import primary_failure
from inferlab.errors import ConfigError
from inferlab.server import LaunchSpec, ServerProcess, free_port, launch, stop, wait_ready
from inferlab.store import Store

__all__ = [
    "config_row",
    "fatal_check",
    "health_path",
    "launch_config",
    "output_dir",
    "served_model",
    "server_url",
]


def output_dir(camp: CampaignFile) -> Path:
    return camp.campaign.output or Path("inferlab-out") / camp.campaign.name


def fatal_check(spec: EngineSpec) -> Any:
    """A ``wait_ready`` fatal check from the engine's log signatures."""

    def check(lines: Sequence[str]) -> tuple[str, str, str] | None:
        hit = primary_failure(m for m in classify_log(lines, spec) if m.fatal)
        return (hit.kind, hit.text, hit.remedy) if hit is not None else None

    return check


def served_model(url: str, fallback: str) -> str:
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=10) as r:
            return str(json.loads(r.read())["data"][0]["id"])
    except (OSError, ValueError, KeyError, IndexError):
        return fallback


def health_path(cfg: ResolvedConfig) -> str:
    """The path that answers 200 once ``cfg``'s server is ready."""
    path = cfg.health_path or get_engine(cfg.engine).health_path
    if not path:
        raise ConfigError(f"engine {cfg.engine!r}: no health path; give engine.health")
    return path


def server_url(server: ServerProcess, cfg: ResolvedConfig) -> str:
    """The base URL of a launched server (its health URL without the health path)."""
    return server.spec.health_url.removesuffix(health_path(cfg))


def launch_config(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    *,
    python: str | None = None,
    guard: bool = False,
    cpus: CpuSplit | None = None,
) -> ServerProcess:
    """Start ``cfg`` and wait until it is ready (``LaunchError`` when it is not). With
    ``cpus``, its process group runs on the server's CPUs, the engine's thread knob set to
    match (a config's own ``env`` wins). The server
    is recorded against orphans (``campaign.orphans``) from the moment it exists; a launch that
    fails, or is interrupted, is stopped and its record dropped. ``guard``: the server dies with
    this process (``inferlab.server.guard``: ``run`` and Ray actors; not ``up``, which leaves
    it running)."""
    spec = get_engine(cfg.engine)
    port = cfg.port or free_port()
    addr = "127.0.0.1" if cfg.host in ("local", "localhost", "") else cfg.host.split("@")[-1]
    argv = spec.launch_argv(
        cfg.model,
        host="127.0.0.1" if addr == "127.0.0.1" else "0.0.0.0",
        port=port,
        python=cfg.python or python or sys.executable,
        args=cfg.args,
        launcher=cfg.launcher,
        template=cfg.command,
    )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log = output_dir(camp) / "logs" / f"{cfg.name}-{stamp}.log"
    ls = LaunchSpec(
        name=cfg.name,
        argv=argv,
        env={**(cpus.server_env if cpus else {}), **cfg.env},
        port=port,
        log_path=log,
        health_url=f"http://{addr}:{port}{health_path(cfg)}",
        host=cfg.host,
        ready_timeout_s=cfg.ready_timeout_s,
        stop_grace_s=cfg.stop_grace_s,
        cpus=cpus.server if cpus else None,
        guard=guard,
    )
    server = launch(ls)
    orphans.remember(output_dir(camp), cfg.name, server)
    try:
        wait_ready(server, fatal=fatal_check(spec))
    except BaseException:
        stop(server, drain_timeout_s=10.0)
        orphans.forget(output_dir(camp), cfg.name)
        raise
    return server


def config_row(store: Store, camp: CampaignFile, cfg: ResolvedConfig) -> int:
    """The store's config row of a campaign config (call inside a transaction)."""
    cid = store.campaign_id(camp.campaign.name)
    return store.config_id(
        cid,
        cfg.name,
        engine=cfg.engine,
        model=cfg.model,
        argv=cfg.args,
        env=cfg.env,
        extra=lever_files.config_extra(cfg),
    )
