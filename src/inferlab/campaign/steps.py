"""One config's way through ``run`` and ``up``, step by step, each undone in reverse order.

``config_files``: tuned files made (``tunestep``), every ``files`` kind installed, restored on
the way out (also after a failure or Ctrl-C). ``server_running``: the launch, stored as a
``launch`` verification (a failed one with its classified cause, log tail and findings), the
stop with its port, GPU-drain and runtime-failure checks (``aftermath``), the orphan record
dropped. ``check_applied``: the
lever evidence of the config's diff against the baseline, stored and told.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.campaign.context import CpuSplit, Launcher, LeverItem, RuntimeFailure
from inferlab.campaign.parts import files as lever_files
from inferlab.campaign.parts import orphans
from inferlab.campaign.parts.aftermath import stop_and_check
from inferlab.campaign.parts.applied import check_levers, gather, item_lines, record_levers
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import SUBPROCESS, launch_config
from inferlab.campaign.parts.tunestep import baseline_log, tuned_config
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.errors import LaunchError
from inferlab.logs import store_log_findings
from inferlab.server import ServerProcess
from inferlab.server.gpumem import used_mib
from inferlab.store import Store

__all__ = ["Held", "StepFailed", "check_applied", "config_files", "record", "server_running"]

Say = Callable[[str], None]


@dataclass
class StepFailed(Exception):
    """A step ended the config: its outcome ``status`` and what to tell."""

    status: str
    message: str
    remedy: str | None = None
    tail: tuple[str, ...] = ()


def record(store: Store, config_id: int, kind: str, passed: bool, detail: dict[str, Any]) -> None:
    with store.transaction():
        store.add_verification(config_id, kind, passed, detail)


@contextlib.contextmanager
def config_files(
    camp: CampaignFile,
    base: ResolvedConfig,
    cfg: ResolvedConfig,
    *,
    store: Store | lever_files.Rows | None,
    config_id: int | None,
    say: Say,
    owner: str = "run",
    keep: bool = False,
    file_sets: list[lever_files.FileSet] | None = None,
    log: Path | None = None,
) -> Iterator[tuple[ResolvedConfig, lever_files.Installed | None]]:
    """``cfg`` with its tuned files, installed; restored on exit unless ``keep`` (``up``).
    ``store``: a recorder on a Ray node; ``file_sets``: the files as read where the campaign
    file is (else read here); ``log``: the baseline's launch log (else found in the store)."""
    out = camp.output_dir
    if log is None and isinstance(store, Store) and cfg.tune:
        log = baseline_log(store, camp.campaign.name, base.name)
    cfg, lines = tuned_config(cfg, out, log)
    for line in lines:
        say(line)
    inst = lever_files.install(
        out, camp.campaign.name, cfg, owner=owner, store=store, config_id=config_id,
        file_sets=file_sets,
    )  # fmt: skip
    if inst is not None:
        for d in inst.data["dirs"]:
            new = sum(1 for e in d["entries"] if e["action"] == "new")
            say(
                f"{cfg.name}: files {d['kind']}: {len(d['entries'])} file(s) into {d['dir']} "
                f"({new} new, {len(d['entries']) - new} replaced; originals in "
                f"{inst.data['backup']})"
            )
    try:
        yield cfg, inst
    except BaseException:
        keep = False
        raise
    finally:
        if inst is not None and not keep:
            say(lever_files.restore(inst, store=store, config_id=config_id).line())


@dataclass
class Held:
    """The config's server while it runs, NVML's used MiB per GPU before its launch and once
    it was ready, and what killed it while it served (``campaign.parts.aftermath``); where it runs
    (``launcher``) and, with ``clock``, the clock its points are read on (``campaign.parts.clock``)."""

    server: ServerProcess | None = None
    gpu_before: list[int] | None = None
    gpu_ready: list[int] | None = None
    failure: RuntimeFailure | None = None
    launcher: Launcher = SUBPROCESS
    clock: ModelClock | None = None


@contextlib.contextmanager
def server_running(
    camp: CampaignFile,
    cfg: ResolvedConfig,
    *,
    store: Store,
    config_id: int,
    say: Say,
    held: Held | None = None,
    extra: dict[str, Any] | None = None,
    cpus: CpuSplit | None = None,
) -> Iterator[ServerProcess]:
    """Launch ``cfg`` (``StepFailed`` "launch-failed" when it does not come up), stop it on
    exit with the stop, GPU-drain and runtime-failure checks; all stored with the config
    (``extra``: more of the launch record, e.g. the profiling note; ``cpus``: the CPU split)."""
    held = held or Held()
    name = camp.campaign.name
    held.gpu_before = used_mib()
    say(f"{cfg.name}: launching ...")
    try:
        held.server = server = launch_config(
            camp, cfg, guard=True, cpus=cpus, launcher=held.launcher
        )
    except LaunchError as exc:
        if exc.log_path:
            store_log_findings(store, str(exc.log_path), campaign=name, config_id=config_id)
        tail = exc.tail[-40:]  # secrets already redacted (LaunchError)
        detail = {"kind": exc.kind, "message": str(exc), "remedy": exc.remedy, "tail": tail,
                  "log_path": str(exc.log_path or "")}  # fmt: skip
        record(store, config_id, "launch", False, detail)
        raise StepFailed("launch-failed", str(exc), exc.remedy, tuple(tail[-12:])) from None
    held.gpu_ready = used_mib()
    try:
        ready = {"ready_s": server.ready_s, "log_path": str(server.spec.log_path),
                 "argv": server.spec.argv, "gpu_used_mib": held.gpu_ready}  # fmt: skip
        ready |= extra or {}
        record(store, config_id, "launch", True, ready)  # argv scrubbed by the store
        yield server
    finally:
        say(f"{cfg.name}: stopping ...")
        held.failure, line = stop_and_check(
            server,
            get_engine(cfg.engine),
            config_id,
            store,
            name,
            gpu_before=held.gpu_before,
            gpu_ready=held.gpu_ready,
            stopper=held.launcher.stop,
        )
        orphans.forget(camp.output_dir, cfg.name)
        say(f"{cfg.name}: {line}")


def check_applied(
    base: ResolvedConfig,
    cfg: ResolvedConfig,
    *,
    url: str | None,
    log_path: Path | None,
    installed: lever_files.Installed | None,
    store: Store | None,
    config_id: int | None,
    say: Say,
) -> list[LeverItem]:
    """The lever evidence of ``cfg`` against the baseline, stored (when there is a diff) and
    told one line per item."""
    src = gather(get_engine(cfg.engine), cfg, log_path=log_path, url=url)
    items = check_levers(base, cfg, src, installed)
    if items and store is not None and config_id is not None:
        record_levers(store, config_id, items)
    for line in item_lines(items):
        say(f"{cfg.name}: lever {line}")
    return items
