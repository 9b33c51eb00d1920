"""What every config of one ``run --ray`` shares, on the driver's side.

The driver (:mod:`inferlab.cluster.campaign`) owns the runs of the configs
(:class:`inferlab.cluster.task.ConfigRun`); each reads this, and nothing here knows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.campaign.context import CampaignEvents
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.store import Store

__all__ = ["Shared"]


@dataclass
class Shared:
    """What every config of one ``run --ray`` shares (the driver's side only)."""

    ray: Any
    path: Path
    camp: CampaignFile
    store: Store
    events: CampaignEvents
    no_verify: bool
    resume_hint: str
    recon_nodes: set[str] = field(default_factory=set)
    take_recon: bool = True
    baseline: ResolvedConfig | None = None  # every config's levers are checked against it
