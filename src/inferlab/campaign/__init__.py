"""Orchestration: the only layer that combines servers, verification, load and the store
(``run``, ``up``/``down``, the plan).

Its role subpackages, each importing only those below it (the ``campaign-layers`` contract):
``drivers/`` (``run``, ``up``, the demo, interleave) → ``pipeline`` (one config through the
stage table and a pass) → ``passes`` (what runs on the live server) → ``stages/`` (files,
server, verified, levers) → ``parts/`` (launch, files, plan, capture, ...) → ``context``
(the value types and seams every layer shares)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.campaign.context import CampaignEvents, ConfigOutcome
    from inferlab.campaign.drivers.runner import CampaignResult, run_campaign
    from inferlab.campaign.drivers.up import UpResult, down
    from inferlab.campaign.parts.plan import Plan, make_plan, render_plan, select_configs
    from inferlab.campaign.parts.resolve import resolve_configs

# ``up`` is not on the face: ``from inferlab.campaign.drivers.up import up``
__all__ = [
    "CampaignEvents",
    "CampaignResult",
    "ConfigOutcome",
    "Plan",
    "UpResult",
    "down",
    "make_plan",
    "render_plan",
    "resolve_configs",
    "run_campaign",
    "select_configs",
]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.campaign.parts.plan": ("Plan", "make_plan", "render_plan", "select_configs"),
        "inferlab.campaign.parts.resolve": ("resolve_configs",),
        "inferlab.campaign.context": ("CampaignEvents", "ConfigOutcome"),
        "inferlab.campaign.drivers.runner": ("CampaignResult", "run_campaign"),
        "inferlab.campaign.drivers.up": ("UpResult", "down"),
    },
)
