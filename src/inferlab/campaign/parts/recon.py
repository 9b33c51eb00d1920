"""Recon before a campaign acts, stored with it (kind "recon" in the analyses table)."""

from __future__ import annotations

from collections.abc import Callable

from inferlab.config.resolve import ResolvedConfig
from inferlab.errors import InferlabError
from inferlab.recon import ReconOptions, run_recon
from inferlab.store import Store

__all__ = ["store_recon"]


def store_recon(
    store: Store, campaign: str, configs: list[ResolvedConfig], message: Callable[[str], None]
) -> None:
    """Recon before acting: GPUs, NCCL/engine variables and, when the first local config runs
    a known engine from a given Python, that engine's versions and tuned config files — stored
    with the campaign (``--help`` flags are left to ``inferlab recon``: they take tens of
    seconds). A failed look is a warning, never the end of the campaign."""
    # ``host = ""`` is local everywhere else; recon has always passed it over (kept as it was)
    local = [c for c in configs if c.is_local and c.host]
    engine, python = (local[0].engine, local[0].python) if local else (None, None)
    opts = ReconOptions.before_run(engine, python)
    try:
        rec = run_recon(opts)
    except InferlabError as exc:
        message(f"recon skipped: {exc}")
        return
    with store.transaction():
        store.add_analysis("recon", rec.host, rec.to_dict(), campaign=campaign)
