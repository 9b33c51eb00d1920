"""``inferlab demo --sim``: the seed campaign on the reference engine's timing model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferlab.report.compare import build_comparison
from inferlab.store import Store


@pytest.mark.timeout(900)
def test_demo_sim_reproduces_the_seed_campaign(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "inferlab.cli.main", "demo", "--sim"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=880,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    status = dict(
        line.split(": ", 1)[0:2]
        for line in r.stdout.splitlines()
        if line.split(": ", 1)[0] in ("baseline", "A", "B", "B-first-try")
    )
    assert status["baseline"].startswith("measured") and status["B"].startswith("measured")
    assert status["B-first-try"].startswith("launch-failed")
    out = tmp_path / "inferlab-out" / "sim-dsv4"
    html = (out / "report.html").read_text()
    assert "SIMULATED" in html and "<svg" in html
    with Store(out / "demo.db") as store:
        launch = store.db.execute(
            "SELECT v.detail_json FROM verifications v JOIN configs g ON g.id = v.config_id "
            "WHERE g.name = 'B-first-try' AND v.kind = 'launch'"
        ).fetchone()
        detail = json.loads(launch[0])
        assert detail["kind"] == "oom_cuda_graph_capture"
        assert "--mem-fraction-static" in (detail["remedy"] or "")
        c = build_comparison(store, campaign="sim-dsv4", baseline="baseline")
    tpot = {cfg: c.cells[(cfg, "C=1")].values["tpot_ms"] for cfg in ("baseline", "A")}
    # the story's 94 → 88 ms, on the model's clock at --time-scale 0.1
    assert tpot["baseline"] == pytest.approx(9.4, rel=0.05)
    assert tpot["A"] == pytest.approx(8.8, rel=0.05)
    assert c.saturation["baseline"].sentence.startswith("saturated by C=8")
