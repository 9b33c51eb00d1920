"""``lossless = false`` (greedy equivalence recorded, not gating) and ``run --config`` on a real
campaign of reference-engine servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.plan import make_plan
from inferlab.errors import ConfigError
from inferlab.store import Store
from support.campaign import write_campaign
from support.campaigns import LOSSY


def _write(tmp: Path) -> Path:
    return write_campaign(tmp / "c.toml", **LOSSY)


def test_campaign_measures_a_lossy_config_and_refuses_a_false_claim(tmp_path: Path) -> None:
    p = _write(tmp_path)
    with Store(tmp_path / "db") as store:
        res = run_campaign(p, store=store, only=["baseline", "other-numbers", "claims-lossless"])
        status = {o.config: o.status for o in res.outcomes}
        rows = store.db.execute(
            "SELECT g.name, v.kind, v.passed, v.detail_json FROM verifications v "
            "JOIN configs g ON g.id = v.config_id ORDER BY v.id"
        ).fetchall()
    assert status == {
        "baseline": "measured",
        "other-numbers": "measured",
        "claims-lossless": "verify-failed",
    }
    eq = {n: (passed, json.loads(d)) for n, k, passed, d in rows if k == "equivalence"}
    assert eq["other-numbers"][0] == 0 and eq["other-numbers"][1]["gating"] is False
    assert eq["other-numbers"][1]["message"].startswith("not gating (lossless = false): ")
    assert eq["claims-lossless"][1]["gating"] is True
    stops = [json.loads(d) for n, k, _, d in rows if k == "stop"]
    assert len(stops) == 3 and all(s["message"].startswith("SIGTERM after ") for s in stops)
    assert all(s["gpu_memory"] is None for s in stops)  # no NVML here: nothing to compare


def test_unknown_config_is_named(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store, pytest.raises(ConfigError, match="--config 'nope'"):
        run_campaign(_write(tmp_path), store=store, only=["nope"])
    assert len(make_plan(_write(tmp_path)).configs) == 4
