"""Connecting to a Ray cluster (``cluster.connect``): bad addresses refused quickly."""

from __future__ import annotations

import time

import pytest

from inferlab.cluster.connect import connect, resolve_address
from inferlab.errors import ConfigError


def test_bad_addresses_are_refused_quickly() -> None:
    with pytest.raises(ConfigError, match="expected HOST:PORT"):
        resolve_address("nowhere")
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=r"cannot reach a Ray cluster at 192\.0\.2\.1:6379"):
        connect("192.0.2.1:6379", timeout_s=1.0)  # TEST-NET-1: never answers
    assert time.monotonic() - t0 < 5
