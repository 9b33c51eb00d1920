"""``inferlab up`` / ``down``: launch one config with its checks, leave it running; stop it.

Launch → wait ready (failing fast on fatal log signatures, classified with a remedy) → verify
(probes, length, stream, greedy equivalence against the campaign's reference config) → store the
verification → leave the server running and record it in a state file that ``down`` reads.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.config.campaign import CampaignFile, load_campaign
from inferlab.config.resolve import ResolvedConfig, resolve_configs
from inferlab.engines import EngineSpec, get_engine
from inferlab.engines.base import classify_log
from inferlab.engines.logs import primary_failure
from inferlab.errors import ConfigError, VerifyError
from inferlab.server import (
    LaunchSpec,
    ServerProcess,
    StopReport,
    free_port,
    launch,
    stop,
    stop_group,
    wait_ready,
)
from inferlab.store import Store
from inferlab.verify import GreedyOutputs, VerifyReport, verify_endpoint

__all__ = [
    "UpResult",
    "campaign_lock",
    "down",
    "fatal_check",
    "find_config",
    "launch_config",
    "output_dir",
    "reference_outputs",
    "served_model",
    "store_verification",
    "up",
    "verify_config",
]


@dataclass
class UpResult:
    config: str
    url: str
    model: str
    log_path: Path
    pid: int
    port: int
    ready_s: float | None
    verify: VerifyReport | None
    argv: list[str]


def output_dir(camp: CampaignFile) -> Path:
    return camp.campaign.output or Path("inferlab-out") / camp.campaign.name


@contextlib.contextmanager
def campaign_lock(camp: CampaignFile) -> Iterator[None]:
    """One runner per campaign on a host: at most one of its servers runs at a time."""
    d = output_dir(camp)
    d.mkdir(parents=True, exist_ok=True)
    f = (d / ".lock").open("w")
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ConfigError(
                f"campaign {camp.campaign.name!r} is already running on this host "
                f"(lock {d / '.lock'})"
            ) from None
        yield
    finally:
        f.close()


def _state_path(camp: CampaignFile, config: str) -> Path:
    return output_dir(camp) / ".servers" / f"{config}.json"


def find_config(configs: Sequence[ResolvedConfig], name: str, path: Path) -> ResolvedConfig:
    for c in configs:
        if c.name == name:
            return c
    raise ConfigError(f"{path}: no config {name!r} (configs: {', '.join(c.name for c in configs)})")


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


def launch_config(
    camp: CampaignFile, cfg: ResolvedConfig, *, python: str | None = None, guard: bool = False
) -> ServerProcess:
    """Start ``cfg`` and wait until it is ready (``LaunchError`` when it is not); ``guard``:
    the server dies with this process (``inferlab.server.guard``)."""
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
    )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log = output_dir(camp) / "logs" / f"{cfg.name}-{stamp}.log"
    ls = LaunchSpec(
        name=cfg.name,
        argv=argv,
        env=cfg.env,
        port=port,
        log_path=log,
        health_url=f"http://{addr}:{port}{spec.health_path}",
        host=cfg.host,
        ready_timeout_s=cfg.ready_timeout_s,
        stop_grace_s=cfg.stop_grace_s,
        guard=guard,
    )
    server = launch(ls)
    try:
        wait_ready(server, fatal=fatal_check(spec))
    except KeyboardInterrupt:  # Ctrl-C while it loads: leave no server behind
        stop(server)
        raise
    return server


def reference_outputs(
    camp: CampaignFile, cfg: ResolvedConfig, store: Store
) -> GreedyOutputs | None:
    """The stored greedy outputs ``cfg`` must match (``verify.equivalent_to``), or None."""
    ref_name = camp.verify.equivalent_to
    if ref_name is None or ref_name == cfg.name:
        return None
    stored = store.latest_verification(camp.campaign.name, ref_name, "greedy-outputs")
    return GreedyOutputs.from_json(stored) if stored is not None else None


def verify_config(
    camp: CampaignFile, cfg: ResolvedConfig, url: str, model: str, store: Store | None
) -> VerifyReport:
    spec = get_engine(cfg.engine)
    ref = reference_outputs(camp, cfg, store) if store is not None else None
    rep = verify_endpoint(
        url, model=model, engine=spec, section=camp.verify, reference=ref, lossless=cfg.lossless
    )
    if store is not None:
        store_verification(store, camp, cfg, rep)
    return rep


def store_verification(
    store: Store, camp: CampaignFile, cfg: ResolvedConfig, rep: VerifyReport
) -> None:
    """Every check of ``rep`` with ``cfg``, and its greedy outputs when it passed."""
    with store.transaction():
        cid = store.campaign_id(camp.campaign.name)
        gid = store.config_id(
            cid, cfg.name, engine=cfg.engine, model=cfg.model, argv=cfg.args, env=cfg.env
        )
        for c in rep.checks:
            store.add_verification(gid, c.kind, c.passed, c.to_json())
        if rep.outputs is not None and rep.passed:
            store.add_verification(gid, "greedy-outputs", True, rep.outputs.to_json())


def up(
    campaign_file: str | Path,
    config: str,
    *,
    store: Store | None = None,
    no_verify: bool = False,
) -> UpResult:
    """Launch + verify ``config`` and leave it running (``down`` stops it)."""
    path = Path(campaign_file)
    camp = load_campaign(path)
    cfg = find_config(resolve_configs(camp, path, path.read_text(encoding="utf-8")), config, path)
    spec = get_engine(cfg.engine)
    state = _state_path(camp, cfg.name)
    if state.exists():
        old = json.loads(state.read_text())
        if Path(f"/proc/{old['pid']}").exists():
            raise ConfigError(
                f"{cfg.name} already runs (pid {old['pid']}, {old['url']}); "
                f"inferlab down {path} {cfg.name}"
            )
    if not spec.launchers:
        if not cfg.url:
            raise ConfigError(
                f"{path}: engine.url: kind {cfg.engine!r} needs the URL of the running endpoint"
            )
        url = cfg.url.rstrip("/")
        model = served_model(url, cfg.model or "")
        rep = None if no_verify else verify_config(camp, cfg, url, model, store)
        if rep is not None and not rep.passed and camp.verify.enabled is not False:
            raise VerifyError(_failure_text(cfg.name, rep))
        return UpResult(cfg.name, url, model, Path(), 0, 0, None, rep, [])
    server = launch_config(camp, cfg)
    url = server.spec.health_url.rsplit(spec.health_path, 1)[0]
    model = served_model(url, cfg.model or "")
    rep = None
    if not no_verify and camp.verify.enabled:
        try:
            rep = verify_config(camp, cfg, url, model, store)
        except Exception:
            stop(server)
            raise
        if not rep.passed:
            stop(server)
            raise VerifyError(_failure_text(cfg.name, rep))
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(
        json.dumps(
            {
                "config": cfg.name,
                "pid": server.pid,
                "port": server.spec.port,
                "url": url,
                "host": cfg.host,
                "log": str(server.spec.log_path),
                "grace_s": cfg.stop_grace_s,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "argv": server.spec.argv,
            },
            indent=2,
        )
    )
    return UpResult(
        cfg.name,
        url,
        model,
        server.spec.log_path,
        server.pid,
        server.spec.port,
        server.ready_s,
        rep,
        server.spec.argv,
    )


def _failure_text(name: str, rep: VerifyReport) -> str:
    fails = "; ".join(f"{c.kind}: {c.message}" for c in rep.failures())
    what = "diverged from the reference" if rep.diverged else "failed verification"
    return f"{name} {what}: {fails} (use --no-verify to measure anyway)"


def down(campaign_file: str | Path, config: str | None = None) -> list[tuple[str, StopReport]]:
    """Stop the servers ``up`` left running for this campaign (one, or all)."""
    path = Path(campaign_file)
    camp = load_campaign(path)
    states = sorted((output_dir(camp) / ".servers").glob("*.json"))
    if config is not None:
        states = [s for s in states if s.stem == config]
        if not states:
            raise ConfigError(f"no running server recorded for config {config!r} of {path}")
    out = []
    for st in states:
        d = json.loads(st.read_text())
        rep = stop_group(
            int(d["pid"]),
            int(d["port"]),
            host=d.get("host", "local"),
            grace_s=float(d.get("grace_s", 20.0)),
        )
        st.unlink()
        out.append((str(d["config"]), rep))
    return out
