"""Typed, closed config models (pydantic, ``extra=forbid``): the campaign file, a load
sweep, a resolved config, and the readers they share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.faces import lazy_face

if TYPE_CHECKING:
    from inferlab.config.bench import SLO, BenchConfig, LoadSpec, validation_message
    from inferlab.config.campaign import (
        CampaignFile,
        ConfigSpec,
        EngineSection,
        load_campaign,
    )
    from inferlab.config.jsonfile import read_json
    from inferlab.config.pattern import LoadPattern
    from inferlab.config.resolve import ResolvedConfig
    from inferlab.config.source import locate
    from inferlab.config.urls import redact_url
    from inferlab.config.workload import WorkloadSpec

__all__ = [
    "SLO",
    "BenchConfig",
    "CampaignFile",
    "ConfigSpec",
    "EngineSection",
    "LoadPattern",
    "LoadSpec",
    "ResolvedConfig",
    "WorkloadSpec",
    "load_campaign",
    "locate",
    "read_json",
    "redact_url",
    "validation_message",
]

__getattr__ = lazy_face(
    __name__,
    {
        "inferlab.config.bench": (
            "SLO",
            "BenchConfig",
            "LoadSpec",
            "validation_message",
        ),
        "inferlab.config.campaign": (
            "CampaignFile",
            "ConfigSpec",
            "EngineSection",
            "load_campaign",
        ),
        "inferlab.config.jsonfile": ("read_json",),
        "inferlab.config.pattern": ("LoadPattern",),
        "inferlab.config.resolve": ("ResolvedConfig",),
        "inferlab.config.source": ("locate",),
        "inferlab.config.urls": ("redact_url",),
        "inferlab.config.workload": ("WorkloadSpec",),
    },
)
