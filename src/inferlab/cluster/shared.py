"""What every config of one ``run --ray`` shares, on the driver's side.

The driver (:mod:`inferlab.cluster.campaign`) owns the runs of the configs
(:class:`inferlab.cluster.task.ConfigRun`); each reads this, and nothing here knows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferlab.campaign.context import CampaignEvents
from inferlab.campaign.parts.stopping import baseline_refs
from inferlab.config.campaign import CampaignFile
from inferlab.config.resolve import ResolvedConfig
from inferlab.load.adaptive import BaselineRef
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
    #: the config a sequential A/B is against (``Plan.reference``); "" for none
    reference: str = ""

    def findings(self, gid: int, found: list[dict[str, Any]], source: str) -> None:
        """A config's log findings (one transaction)."""
        if found:
            with self.store.transaction():
                self.store.findings.add(
                    found, campaign=self.camp.campaign.name, config_id=gid, source=source
                )

    def baselines(self, name: str) -> dict[str, BaselineRef]:
        """The reference's stored points config ``name``'s sequential A/B is against (none
        for the reference itself, or without ``sequential``)."""
        if not self.reference or name == self.reference:
            return {}
        return baseline_refs(self.store, self.camp.campaign.name, self.reference)
