"""Saved tune runs (``tune.saved``): the versions agree and the runner's JSON parses."""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.tune.runner import RESULT_VERSION as RUNNER_VERSION
from inferlab.tune.saved import RESULT_VERSION, parse_run
from support.tunerun import CEIL, config, run_json


def test_versions_agree() -> None:
    assert RESULT_VERSION == RUNNER_VERSION


def test_parse_run_accepts_the_runners_json(tmp_path: Path) -> None:
    data = json.loads(run_json(tmp_path / "r.json").read_text())
    run = parse_run(data)
    assert (
        run.devices == 1 and run.ceilings == CEIL and run.shapes() == [(2112, 7168), (7168, 2048)]
    )
    assert run.engine_configs()[(2112, 7168)][1] == config("BM16_BN64_G1_w8_s5")
