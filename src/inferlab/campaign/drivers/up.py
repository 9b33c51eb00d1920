"""``inferlab up`` / ``down``: launch one config with its checks, leave it running; stop it.

Under the campaign's lock: orphans of a dead runner stopped and pending files restored →
tuned/installed files → launch → wait ready (failing fast on fatal log signatures, classified
with a remedy) → verify (probes, length, stream, greedy equivalence against the campaign's
reference config) → lever evidence against the baseline → store it all → leave the server
running, recorded in a state file that ``down`` reads (``down`` also restores the files).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from inferlab.campaign import passes
from inferlab.campaign.context import (
    ConfigContext,
    CpuSplit,
    LeverItem,
    RunContext,
    StepFailed,
)
from inferlab.campaign.parts import files as lever_files
from inferlab.campaign.parts.cpus import campaign_streams, plan_cpus
from inferlab.campaign.parts.launch import campaign_lock, config_row
from inferlab.campaign.parts.orphans import recover_campaign
from inferlab.campaign.parts.plan import baseline_of, reference_name
from inferlab.campaign.parts.resolve import resolve_configs
from inferlab.campaign.pipeline import run_config
from inferlab.campaign.stages.server import LEFT_RUNNING, state_path
from inferlab.config.campaign import load_campaign
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import ConfigError, VerifyError
from inferlab.server import StopReport, stop_group
from inferlab.store import Store
from inferlab.verify import VerifyReport

__all__ = [
    "UpResult",
    "down",
    "find_config",
    "up",
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


def find_config(configs: Sequence[ResolvedConfig], name: str, path: Path) -> ResolvedConfig:
    for c in configs:
        if c.name == name:
            return c
    raise ConfigError(f"{path}: no config {name!r} (configs: {', '.join(c.name for c in configs)})")


def _refuse_if_up(state: Path, cfg: ResolvedConfig, path: Path) -> None:
    if state.exists():
        old = json.loads(state.read_text())
        if Path(f"/proc/{old['pid']}").exists():
            raise ConfigError(
                f"{cfg.name} already runs (pid {old['pid']}, {old['url']}); "
                f"inferlab down {path} {cfg.name}"
            )


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
    _refuse_if_up(state_path(camp, cfg.name), cfg, path)
    notes: list[str] = []
    with campaign_lock(camp):
        notes += recover_campaign(camp.output_dir, store)
        gid = None
        if store is not None:
            with store.transaction():
                gid = config_row(store, camp, cfg)
        launched = bool(get_engine(cfg.engine).launchers)
        split = plan_cpus(camp, campaign_streams(camp), path=path, text=text) if launched else _NONE
        base = baseline_of(configs)
        run = RunContext(
            camp,
            path,
            base,
            reference_name(camp, base),
            split,
            store,
            notes.append,
            no_verify=no_verify,
            keep=True,
        )
        cx = ConfigContext(run, cfg, gid)
        try:
            run_config(cx, passes.kept)
        except StepFailed as f:  # only the ``verified`` stage raises it here
            why = f"{cfg.name} {f.message} (use --no-verify to measure anyway)"
            raise VerifyError(why) from None
    if cx.server is None:
        return UpResult(cfg.name, cx.url, cx.model, Path(), 0, 0, None, cx.verify, [], notes)
    sp = cx.server.spec
    return UpResult(
        cx.name,
        cx.url,
        cx.model,
        sp.log_path,
        cx.server.pid,
        sp.port,
        cx.server.ready_s,
        cx.verify,
        sp.argv,
        notes,
        cx.levers,
        split,
    )


#: the CPU split of an endpoint ``up`` does not launch (never shown)
_NONE = CpuSplit(None, None, "not launched", "the endpoint already runs: nothing is pinned")


def down(campaign_file: str | Path, config: str | None = None) -> list[tuple[str, StopReport]]:
    """Stop the servers ``up`` left running for this campaign (one, or all)."""
    path = Path(campaign_file)
    camp = load_campaign(path)
    states = sorted((camp.output_dir / ".servers").glob("*.json"))
    if config is not None:
        states = [s for s in states if s.stem == config]
        if not states:
            raise ConfigError(f"no running server recorded for config {config!r} of {path}")
    out = []
    pending = {p.config: p for p in lever_files.pending_manifests(camp.output_dir)}
    for st in states:
        d = json.loads(st.read_text())
        held = LEFT_RUNNING.pop(int(d["pid"]), None)  # started by this process: reap it
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
