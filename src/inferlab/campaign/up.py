"""``inferlab up`` / ``down``: launch one config with its checks, leave it running; stop it.

Under the campaign's lock: orphans of a dead runner stopped and pending files restored →
tuned/installed files → launch → wait ready (failing fast on fatal log signatures, classified
with a remedy) → verify (probes, length, stream, greedy equivalence against the campaign's
reference config) → lever evidence against the baseline → store it all → leave the server
running, recorded in a state file that ``down`` reads (``down`` also restores the files).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from inferlab.campaign import files as lever_files
from inferlab.campaign import orphans
from inferlab.campaign.applied import LeverItem
from inferlab.campaign.cpus import CpuSplit, campaign_streams, plan_cpus
from inferlab.campaign.launch import (
    config_row,
    fatal_check,
    launch_config,
    output_dir,
    served_model,
    server_url,
)
from inferlab.campaign.orphans import recover_campaign
from inferlab.campaign.steps import check_applied, config_files
from inferlab.config.campaign import CampaignFile, load_campaign
from inferlab.config.resolve import ResolvedConfig, resolve_configs
from inferlab.config.secrets import scrub_argv
from inferlab.engines import get_engine
from inferlab.errors import ConfigError, VerifyError
from inferlab.server import ServerProcess, StopReport, stop, stop_group
from inferlab.server.lifecycle import Proc
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
    notes: list[str] = field(default_factory=list)  # recovery, tuned and installed files
    levers: list[LeverItem] = field(default_factory=list)  # evidence against the baseline
    cpus: CpuSplit | None = None


@contextlib.contextmanager
def campaign_lock(camp: CampaignFile) -> Iterator[None]:
    """One runner per campaign on a host: at most one of its servers runs at a time
    (``campaign.orphans.campaign_lock`` on its output directory)."""
    with orphans.campaign_lock(output_dir(camp), camp.campaign.name):
        yield


def _state_path(camp: CampaignFile, config: str) -> Path:
    return output_dir(camp) / ".servers" / f"{config}.json"


def find_config(configs: Sequence[ResolvedConfig], name: str, path: Path) -> ResolvedConfig:
    for c in configs:
        if c.name == name:
            return c
    raise ConfigError(f"{path}: no config {name!r} (configs: {', '.join(c.name for c in configs)})")


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
    spec = get_engine(cfg.api or cfg.engine)
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
        gid = config_row(store, camp, cfg)
        for c in rep.checks:
            store.add_verification(gid, c.kind, c.passed, c.to_json())
        if rep.outputs is not None and rep.passed:
            store.add_verification(gid, "greedy-outputs", True, rep.outputs.to_json())


def _refuse_if_up(state: Path, cfg: ResolvedConfig, path: Path) -> None:
    if state.exists():
        old = json.loads(state.read_text())
        if Path(f"/proc/{old['pid']}").exists():
            raise ConfigError(
                f"{cfg.name} already runs (pid {old['pid']}, {old['url']}); "
                f"inferlab down {path} {cfg.name}"
            )


def _verify_up(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    url: str,
    model: str,
    store: Store | None,
    no_verify: bool,
) -> VerifyReport | None:
    if no_verify or not camp.verify.enabled:
        return None
    rep = verify_config(camp, cfg, url, model, store)
    if not rep.passed:
        raise VerifyError(f"{cfg.name} {rep.summary()} (use --no-verify to measure anyway)")
    return rep


#: the process handles of the servers ``up`` started in this process and left running, by
#: pid: a dropped handle of a live child warns (ResourceWarning); ``down`` reaps what it stops
_LEFT_RUNNING: dict[int, Proc] = {}


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


def _up_running(
    camp: CampaignFile, cfg: ResolvedConfig, path: Path, store: Store | None, no_verify: bool,
    notes: list[str],
) -> UpResult:  # fmt: skip
    """An endpoint already running (kind ``openai``): verified, nothing launched."""
    if not cfg.url:
        raise ConfigError(
            f"{path}: engine.url: kind {cfg.engine!r} needs the URL of the running endpoint"
        )
    url = cfg.url.rstrip("/")
    model = served_model(url, cfg.model or "")
    rep = _verify_up(camp, cfg, url, model, store, no_verify)
    return UpResult(cfg.name, url, model, Path(), 0, 0, None, rep, [], notes)


def _up_launched(
    camp: CampaignFile, base: ResolvedConfig, cfg: ResolvedConfig, state: Path,
    store: Store | None, gid: int | None, no_verify: bool, notes: list[str], split: CpuSplit,
) -> UpResult:  # fmt: skip
    """Files installed (kept), launched, verified, levers checked; left running."""
    out = output_dir(camp)
    say = notes.append
    with config_files(
        camp, base, cfg, store=store, config_id=gid, say=say, owner="up", keep=True
    ) as (cfg, installed):
        server = launch_config(camp, cfg, cpus=split)
        try:
            url = server_url(server, cfg)
            model = served_model(url, cfg.model or "")
            rep = _verify_up(camp, cfg, url, model, store, no_verify)
            items = check_applied(
                base, cfg, url=url, log_path=server.spec.log_path, installed=installed,
                store=store, config_id=gid, say=say,
            )  # fmt: skip
        except BaseException:
            stop(server)
            orphans.forget(out, cfg.name)
            raise
        _write_state(state, cfg, server, url, split)
        orphans.forget(out, cfg.name)  # the state file owns it now
        _LEFT_RUNNING[server.pid] = server.proc
    sp = server.spec
    return UpResult(
        cfg.name, url, model, sp.log_path, server.pid, sp.port, server.ready_s, rep, sp.argv,
        notes, items, split,
    )  # fmt: skip


def up(
    campaign_file: str | Path,
    config: str,
    *,
    store: Store | None = None,
    no_verify: bool = False,
) -> UpResult:
    """Launch + verify ``config`` (its files installed, its levers checked against the
    baseline) and leave it running (``down`` stops it and restores the files)."""
    path = Path(campaign_file)
    camp = load_campaign(path)
    text = path.read_text(encoding="utf-8")
    configs = resolve_configs(camp, path, text)
    cfg = find_config(configs, config, path)
    state = _state_path(camp, cfg.name)
    _refuse_if_up(state, cfg, path)
    notes: list[str] = []
    with campaign_lock(camp):
        notes += recover_campaign(output_dir(camp), store)
        gid = None
        if store is not None:
            with store.transaction():
                gid = config_row(store, camp, cfg)
        if not get_engine(cfg.engine).launchers:
            return _up_running(camp, cfg, path, store, no_verify, notes)
        split = plan_cpus(camp, campaign_streams(camp), path=path, text=text)
        return _up_launched(camp, configs[0], cfg, state, store, gid, no_verify, notes, split)


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
    pending = {p.config: p for p in lever_files.pending_manifests(output_dir(camp))}
    for st in states:
        d = json.loads(st.read_text())
        held = _LEFT_RUNNING.pop(int(d["pid"]), None)  # started by this process: reap it
        rep = stop_group(
            int(d["pid"]),
            int(d["port"]),
            host=d.get("host", "local"),
            grace_s=float(d.get("grace_s", 20.0)),
            reap=held.poll if held is not None else None,
        )
        st.unlink()
        inst = pending.get(str(d["config"]))
        if inst is not None:  # the files ``up`` installed for it
            rep.notes.append(lever_files.restore(inst).line())
        out.append((str(d["config"]), rep))
    return out
