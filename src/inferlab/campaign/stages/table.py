"""The one stage table of ``run``, ``up`` and ``run --ray``: a config's stages in the order
they start (left in reverse). A new per-config stage is a module of ``campaign.stages`` and one
entry here; ``RunContext.keep`` (``up``) is the policy of what a stage leaves in place."""

from __future__ import annotations

from inferlab.campaign.context import Stage
from inferlab.campaign.stages.files import FILES
from inferlab.campaign.stages.levers import LEVERS
from inferlab.campaign.stages.server import SERVER
from inferlab.campaign.stages.verified import VERIFIED

__all__ = ["STAGES"]

#: every config's stages, in the order they start
STAGES: tuple[Stage, ...] = (FILES, SERVER, VERIFIED, LEVERS)
