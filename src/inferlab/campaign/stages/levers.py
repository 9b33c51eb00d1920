"""The ``levers`` stage: the lever evidence of the config's diff against the baseline, stored
and told (``campaign.parts.applied``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from inferlab.campaign.context import ConfigContext, Installed, LeverItem, Say, Stage
from inferlab.campaign.parts.applied import check_levers, gather, item_lines, record_levers
from inferlab.config.resolve import ResolvedConfig
from inferlab.engines import get_engine
from inferlab.store import Store

__all__ = ["LEVERS", "check_applied"]


def check_applied(
    base: ResolvedConfig,
    cfg: ResolvedConfig,
    *,
    url: str | None,
    log_path: Path | None,
    installed: Installed | None,
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


@contextlib.contextmanager
def _levers(cx: ConfigContext) -> Iterator[None]:
    """The lever evidence of the config against the baseline, in ``cx.levers``."""
    cx.levers = check_applied(
        cx.run.baseline,
        cx.cfg,
        url=cx.url,
        log_path=cx.log_path,
        installed=cx.installed,
        store=cx.run.store,
        config_id=cx.config_id,
        say=cx.say,
    )
    yield


LEVERS = Stage("levers", _levers)
