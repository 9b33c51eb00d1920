"""The ``server`` stage: the config's server launched, and what its way out leaves.

``run``: launched (profiling on when ``[profile]`` names it), stored as a ``launch``
verification (a failed one with its classified cause, log tail and findings: ``StepFailed``
"launch-failed"), stopped on the way out with the stop, GPU-drain and runtime-failure checks
(``campaign.parts.aftermath``), the orphan record dropped. ``up`` (``RunContext.keep``): once
every later stage passed, left running and recorded in the state file ``down`` reads; stopped
again when a later stage fails. Kind ``openai`` (no launcher): the endpoint already running,
nothing launched or stopped.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from inferlab import interrupts
from inferlab.campaign.context import ConfigContext, CpuSplit, Stage, StepFailed
from inferlab.campaign.parts import capture, orphans
from inferlab.campaign.parts.aftermath import stop_and_check
from inferlab.campaign.parts.launch import SUBPROCESS, launch_config, served_model, server_url
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import ConfigError, LaunchError
from inferlab.logs import store_log_findings
from inferlab.secrets import scrub_argv
from inferlab.server import ServerProcess, stop
from inferlab.server.gpumem import used_mib
from inferlab.server.lifecycle import Proc

__all__ = ["LEFT_RUNNING", "SERVER", "given", "server_running", "serving", "state_path"]

#: the process handles of the servers ``up`` started in this process and left running, by
#: pid: a dropped handle of a live child warns (ResourceWarning); ``down`` reaps what it stops
LEFT_RUNNING: dict[int, Proc] = {}


def state_path(camp: CampaignFile, config: str) -> Path:
    """The state file of a server ``up`` left running (what ``down`` reads)."""
    return camp.output_dir / ".servers" / f"{config}.json"


@contextlib.contextmanager
def given(cx: ConfigContext) -> Iterator[None]:
    """Kind ``openai``: the endpoint that already runs (nothing launched, nothing stopped)."""
    cfg = cx.cfg
    if not cfg.url:
        what = "the URL of the running endpoint" if cx.run.keep else "the URL"
        raise ConfigError(f"{cx.run.path}: engine.url: kind {cfg.engine!r} needs {what}")
    cx.url = cfg.url.rstrip("/")
    cx.model = served_model(cx.url, cfg.model or "")
    yield


def serving(cx: ConfigContext, srv: ServerProcess) -> None:
    """``cx`` with the server it launched: its URL, the model it serves, its launch log."""
    cx.server, cx.log_path = srv, srv.spec.log_path
    cx.url = server_url(srv, cx.cfg)
    cx.model = served_model(cx.url, cx.cfg.model or "")


@contextlib.contextmanager
def server_running(
    cx: ConfigContext, cfg: ResolvedConfig, extra: dict[str, Any] | None = None
) -> Iterator[ServerProcess]:
    """Launch ``cfg`` (``StepFailed`` "launch-failed" when it does not come up), stop it on
    exit with the stop, GPU-drain and runtime-failure checks; all stored with the config
    (``extra``: more of the launch record, e.g. the profiling note)."""
    run, held = cx.run, cx.held
    store, name, launcher = run.store, run.name, held.launcher or SUBPROCESS
    assert store is not None and cx.config_id is not None  # ``run`` always stores
    held.gpu_before = used_mib()
    cx.say(f"{cfg.name}: launching ...")
    try:
        held.server = server = launch_config(
            run.campaign, cfg, guard=True, cpus=run.cpus, launcher=launcher
        )
    except LaunchError as exc:
        if exc.log_path:
            store_log_findings(store, str(exc.log_path), campaign=name, config_id=cx.config_id)
        tail = exc.tail[-40:]  # secrets already redacted (LaunchError)
        detail = {
            "kind": exc.kind,
            "message": str(exc),
            "remedy": exc.remedy,
            "tail": tail,
            "log_path": str(exc.log_path or ""),
        }
        cx.record("launch", False, detail)
        raise StepFailed("launch-failed", str(exc), exc.remedy, tuple(tail[-12:])) from None
    held.gpu_ready = used_mib()
    try:
        ready = {
            "ready_s": server.ready_s,
            "log_path": str(server.spec.log_path),
            "argv": server.spec.argv,
            "gpu_used_mib": held.gpu_ready,
        }
        ready |= extra or {}
        cx.record("launch", True, ready)  # argv scrubbed by the store
        yield server
    except KeyboardInterrupt:
        interrupts.note()  # the stop below is short (server.stop)
        raise
    finally:
        cx.say(f"{cfg.name}: stopping ...")
        try:
            held.failure, line = stop_and_check(
                server,
                get_engine(cfg.engine),
                cx.config_id,
                store,
                name,
                gpu_before=held.gpu_before,
                gpu_ready=held.gpu_ready,
                stopper=launcher.stop,
            )
        finally:
            orphans.forget(run.campaign.output_dir, cfg.name)
        cx.say(f"{cfg.name}: {line}")


@contextlib.contextmanager
def _measured(cx: ConfigContext) -> Iterator[None]:
    """``run``'s server: launched (in its profiling form), stopped and checked on the way out."""
    run = cx.run
    assert run.store is not None
    launched, note = capture.launch_form(run.campaign, cx.cfg, run.store)
    with server_running(cx, launched, {"profiling": note} if note else None) as srv:
        serving(cx, srv)
        yield


def _write_state(
    state: Path, cfg: ResolvedConfig, server: ServerProcess, url: str, split: CpuSplit
) -> None:
    """What ``down`` needs to stop the server later (and what it was started with)."""
    state.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "config": cfg.name,
        "pid": server.pid,
        "port": server.spec.port,
        "url": url,
        "host": cfg.host,
        "log": str(server.spec.log_path),
        "grace_s": cfg.stop_grace_s,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": scrub_argv(server.spec.argv),
        "cpus": split.to_json(),
    }
    state.write_text(json.dumps(doc, indent=2))


@contextlib.contextmanager
def _left_running(cx: ConfigContext) -> Iterator[None]:
    """``up``'s server: launched and, once every later stage passed, left running, recorded in
    the state file ``down`` reads; stopped again when a later stage fails."""
    run, cfg = cx.run, cx.cfg
    out = run.campaign.output_dir
    server = launch_config(run.campaign, cfg, cpus=run.cpus)
    try:
        serving(cx, server)
        yield
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            interrupts.note()  # the stop is short (server.stop)
        stop(server)
        orphans.forget(out, cfg.name)
        raise
    _write_state(state_path(run.campaign, cfg.name), cfg, server, cx.url, run.cpus)
    orphans.forget(out, cfg.name)  # the state file owns it now
    LEFT_RUNNING[server.pid] = server.proc


@contextlib.contextmanager
def _server(cx: ConfigContext) -> Iterator[None]:
    """The config's server (see the module docstring for what each driver leaves)."""
    if not get_engine(cx.cfg.engine).launchers:
        stage = given(cx)
    else:
        stage = _left_running(cx) if cx.run.keep else _measured(cx)
    with stage:
        yield


SERVER = Stage("server", _server)
