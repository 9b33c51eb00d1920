"""Orchestration: the only layer that combines servers, verification, load and the store
(``run``, ``up``/``down``, the plan)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.campaign.context import CampaignEvents, ConfigOutcome
    from inferlab.campaign.plan import Plan, make_plan, render_plan, select_configs
    from inferlab.campaign.resolve import resolve_configs
    from inferlab.campaign.runner import CampaignResult, run_campaign
    from inferlab.campaign.up import UpResult, down

# ``up`` is not on the face: ``inferlab.campaign.up`` is its module's name, which the package
# attribute becomes once that module is imported (``from inferlab.campaign.up import up``)
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
        "inferlab.campaign.plan": ("Plan", "make_plan", "render_plan", "select_configs"),
        "inferlab.campaign.resolve": ("resolve_configs",),
        "inferlab.campaign.runner": (
            "CampaignEvents",
            "CampaignResult",
            "ConfigOutcome",
            "run_campaign",
        ),
        "inferlab.campaign.up": ("UpResult", "down"),
    },
)
