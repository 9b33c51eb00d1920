"""Launching one campaign config: its argv, its health URL, its orphan record, its store row.

``launch_config`` starts the server through a :class:`Launcher`, records it against orphans
(``campaign.parts.orphans``) as soon as the process exists, and waits until it is ready, failing
fast on the engine's fatal log signatures; a launch that fails or is interrupted is stopped and its
record dropped. The ``Launcher`` is the seam between a campaign and its servers' processes (as
httpx's ``Transport`` is between a client and the network): :data:`SUBPROCESS`, the default,
starts each as a process group (``inferlab.server``); :class:`InProcessSim` serves the
reference engine on a thread of this process (``sim.inprocess``), for tests whose subject is
not the process.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

from inferlab import interrupts
from inferlab.campaign.context import CpuSplit, Launcher
from inferlab.campaign.parts import files as lever_files
from inferlab.campaign.parts import orphans
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import EngineSpec, get_engine
from inferlab.engines.base import classify_log
from inferlab.engines.logs import primary_failure
from inferlab.errors import ConfigError, LaunchError
from inferlab.secrets import scrub_text
from inferlab.server import (
    LaunchSpec,
    ServerProcess,
    StopReport,
    free_port,
    launch,
    stop,
    wait_ready,
)
from inferlab.server.lifecycle import FatalCheck
from inferlab.store import Store

__all__ = [
    "SUBPROCESS",
    "InProcessSim",
    "Launcher",
    "SubprocessLauncher",
    "campaign_lock",
    "config_row",
    "fatal_check",
    "health_path",
    "launch_config",
    "served_model",
    "server_url",
]


@contextlib.contextmanager
def campaign_lock(camp: CampaignFile) -> Iterator[None]:
    """One runner per campaign on a host: at most one of its servers runs at a time
    (``campaign.parts.orphans.campaign_lock`` on its output directory)."""
    with orphans.campaign_lock(camp.output_dir, camp.campaign.name):
        yield


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


class SubprocessLauncher:
    """Each server a process group of its own (``inferlab.server``): the default."""

    outlives = True

    def start(self, spec: LaunchSpec) -> ServerProcess:
        return launch(spec)

    def wait_ready(self, server: ServerProcess, fatal: FatalCheck | None) -> float:
        return wait_ready(server, fatal=fatal)

    def stop(self, server: ServerProcess, *, drain_timeout_s: float = 60.0) -> StopReport:
        return stop(server, drain_timeout_s=drain_timeout_s)


SUBPROCESS: Launcher = SubprocessLauncher()


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) != 0


class InProcessSim:
    """The reference engine's configs (a ``sim serve`` command line: kind ``sim``, or a
    ``command`` that runs it) served on a thread of this process, on loopback; its log lines
    go to the launch's log file as the real server's do. Nothing outlives this process, so
    nothing is recorded against orphans; CPU pinning does not apply."""

    outlives = False

    def start(self, spec: LaunchSpec) -> ServerProcess:
        from inferlab.sim.inprocess import SimThread, serve_config  # the engine, only when used

        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        lock = threading.Lock()

        def log(line: str) -> None:
            with lock, spec.log_path.open("a", encoding="utf-8") as f:
                f.write(line + "\n")

        log(f"# inferlab launch {spec.name} (in process): {scrub_text(shlex.join(spec.argv))}")
        try:
            config, command = serve_config(spec.argv, spec.env)
        except ConfigError as exc:  # what the real command would print before exiting
            log(f"Error: {exc}")
            raise LaunchError(
                f"{spec.name}: {exc}",
                kind="not-startable",
                remedy="fix the config's sim serve options (inferlab sim serve --help)",
                log_path=spec.log_path,
                tail=[f"Error: {exc}"],
            ) from None
        thread = SimThread(config, spec.env, command, log).start()
        return ServerProcess(spec, thread, time.monotonic())

    def wait_ready(self, server: ServerProcess, fatal: FatalCheck | None) -> float:
        return wait_ready(server, fatal=fatal, poll_s=0.05, kill=self._end)

    def _end(self, server: ServerProcess) -> None:
        server.proc.terminate()

    def stop(self, server: ServerProcess, *, drain_timeout_s: float = 60.0) -> StopReport:
        t0 = time.monotonic()
        gone = server.proc.poll() is not None
        self._end(server)
        try:
            code: int | None = server.proc.wait(server.spec.stop_grace_s)
        except Exception:  # subprocess.TimeoutExpired: still serving after the grace period
            code = None
        return StopReport(
            signal="already exited" if gone else "SIGTERM",
            exit_code=code,
            seconds=time.monotonic() - t0,
            port_free=_port_free(server.spec.port),
            gpu_check="skipped: in-process reference engine",
            notes=[] if code is not None else ["still serving after the grace period"],
        )


def launch_config(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    *,
    python: str | None = None,
    guard: bool = False,
    cpus: CpuSplit | None = None,
    launcher: Launcher = SUBPROCESS,
) -> ServerProcess:
    """Start ``cfg`` and wait until it is ready (``LaunchError`` when it is not). With
    ``cpus``, its process group runs on the server's CPUs, the engine's thread knob set to
    match (a config's own ``env`` wins). The server is recorded against orphans
    (``campaign.parts.orphans``) from the moment it exists; a launch that fails, or is
    interrupted, is stopped and its record dropped. ``guard``: the server dies with this
    process (``inferlab.server.guard``: ``run`` and Ray actors; not ``up``, which leaves it
    running). ``launcher``: where it runs (see the module docstring)."""
    spec = get_engine(cfg.engine)
    port = cfg.port or free_port()
    addr = "127.0.0.1" if cfg.is_local else cfg.host.split("@")[-1]
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
    log = camp.output_dir / "logs" / f"{cfg.name}-{stamp}.log"
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
    server = launcher.start(ls)
    if launcher.outlives:
        orphans.remember(camp.output_dir, cfg.name, server)
    try:
        launcher.wait_ready(server, fatal_check(spec))
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            interrupts.note()  # the stop is short (server.stop): nothing is wanted of it
        try:
            launcher.stop(server, drain_timeout_s=10.0)
        finally:
            orphans.forget(camp.output_dir, cfg.name)
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
