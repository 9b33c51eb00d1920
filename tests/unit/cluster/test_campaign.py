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
