"""Storing an analyzed profile with the config and load point it belongs to
(``inferlab profile TRACE --campaign C --config NAME --point C=16``).

The stored data is ``Profile.to_dict()`` plus ``capture``: what is known of how the trace was
taken (its path and size, the load point, the rank; the fields a campaign's own capture fills
in are left out when unknown), so ``inferlab levers`` can put the profile at its load point."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from inferlab.engines.capture import rank_of
from inferlab.errors import ConfigError
from inferlab.store import Store

__all__ = ["check_point", "store_profile"]

_POINT = re.compile(r"C=[1-9]\d*$")


def check_point(point: str) -> str:
    """A load-point label as the store writes it (``C=16``); ``ConfigError`` otherwise."""
    p = point.strip().replace(" ", "")
    if not _POINT.match(p):
        raise ConfigError(
            f"--point: expected a closed-loop load point such as C=16 (as `inferlab runs` "
            f"labels them), got {point!r}"
        )
    return p


def store_profile(
    store: Store,
    campaign: str,
    trace: Path,
    data: dict[str, Any],
    *,
    config: str | None = None,
    point: str | None = None,
    rank: int | None = None,
) -> int:
    """Store ``data`` (a profile dict) under ``campaign``, with ``config`` (its newest stored
    row, or a new config row holding only the name) and ``point``; returns the analysis id."""
    ours = (data.get("meta") or {}).get("inferlab") or {}
    capture: dict[str, Any] = {
        "path": str(trace.resolve()),
        "size_bytes": trace.stat().st_size,
        "mode": data.get("mode", "gpu"),
        "simulated": bool(ours.get("simulated")),
        "steps": len(data.get("steps") or []),
        "source": "inferlab profile",
    }
    if point is not None:
        capture["point"] = check_point(point)
    rank = rank if rank is not None else rank_of(trace.name)
    if rank is not None:
        capture["rank"] = rank
    stored = {**data, "capture": {**capture, **(data.get("capture") or {})}}
    with store.transaction():
        cid = None
        if config is not None:
            camp = store.campaign_id(campaign)
            found = store.configs.latest(campaign, config)
            cid = found[0] if found else store.config_id(camp, config, engine=None, model=None)
            if found and found[1]:
                stored["capture"]["engine"] = found[1]
        return store.add_analysis("profile", trace.name, stored, campaign=campaign, config_id=cid)
