"""``run --ray``: what it refuses before it connects."""

from __future__ import annotations

import pytest

from inferlab.cluster.campaign import check_cluster_plan
from inferlab.errors import ConfigError
from support.campaign import CampaignToml


def test_interleave_is_refused_before_connecting(campaign_toml: CampaignToml) -> None:
    path = campaign_toml(load={"interleave": True})
    with pytest.raises(ConfigError, match=r"load.interleave: not with --ray"):
        check_cluster_plan(path, "ray://127.0.0.1:1")  # never reached: no cluster there


def test_launch_rounds_asked_for_are_refused_before_connecting(campaign_toml: CampaignToml) -> None:
    for load in ({"launches": 2}, {"max_launches": 3}):
        path = campaign_toml(load=load)
        with pytest.raises(ConfigError, match=r"load.launches: rounds of launches are not run"):
            check_cluster_plan(path, "ray://127.0.0.1:1")  # never reached: no cluster there
