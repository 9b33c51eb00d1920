"""The ``files`` stage: the config's tuned files made and every ``files`` kind installed.

``config_files``: tuned files made (``campaign.parts.tunestep``), every ``files`` kind
installed (``campaign.parts.files``), restored on the way out (also after a failure or Ctrl-C)
unless ``up`` keeps them. Under ``run --ray`` the server's node enters the same step
(``cluster.nodefiles``), with a recorder for the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from inferlab.campaign.context import ConfigContext, Installed, Say, Stage
from inferlab.campaign.parts import files as lever_files
from inferlab.campaign.parts.tunestep import baseline_log, tuned_config
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.store import Store

__all__ = ["FILES", "config_files"]


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
) -> Iterator[tuple[ResolvedConfig, Installed | None]]:
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
        out,
        camp.campaign.name,
        cfg,
        owner=owner,
        store=store,
        config_id=config_id,
        file_sets=file_sets,
    )
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


@contextlib.contextmanager
def _files(cx: ConfigContext) -> Iterator[None]:
    """``cx.cfg`` with its tuned files, installed; restored on exit unless ``up`` keeps them."""
    run = cx.run
    with config_files(
        run.campaign,
        run.baseline,
        cx.cfg,
        store=run.store,
        config_id=cx.config_id,
        say=cx.say,
        owner="up" if run.keep else "run",
        keep=run.keep,
    ) as (cfg, installed):
        cx.cfg, cx.installed = cfg, installed
        yield


FILES = Stage("files", _files)
