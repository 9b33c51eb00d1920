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
        profiles = store.analyses("profile", campaign="sim-dsv4")
    tpot = {cfg: c.cells[(cfg, "C=1")].values["tpot_ms"] for cfg in ("baseline", "A")}
    assert tpot["baseline"] == pytest.approx(94, rel=0.05)  # the story's 94 → 88 ms
    assert tpot["A"] == pytest.approx(88, rel=0.05)
    assert c.saturation["baseline"].sentence.startswith("saturated by C=8")
    # the profile under C=16 load (SIMULATED, 8 ranks each for baseline and A)
    assert sorted({(r["config"], r["data"]["capture"]["point"]) for r in profiles}) == [
        ("A", "C=16"),
        ("baseline", "C=16"),
    ]
    base = next(r["data"] for r in profiles if r["config"] == "baseline")
    assert base["capture"]["simulated"] and base["capture"]["ranks"] == 8
    top, occ = base["kernel_rows"][0], base["occupancy"][0]
    assert top["category"] == "attention" and 0.58 <= top["share"] <= 0.68
    assert occ["blocks"] == 64 and base["sm_count"] == 170
    cats = {r["name"]: r for r in base["categories"]}
    f = (cats["fp8_gemm"]["time_us"] + cats["communication"]["time_us"]) / base["span_us"]
    at16 = {cfg: c.cells[(cfg, "C=16")].values["tpot_ms"] for cfg in ("baseline", "A")}
    assert at16["baseline"] / at16["A"] <= 1 / (1 - f)  # A cannot beat Amdahl on its kernels
    assert "Where the time goes" in html and "A at C=16 (SIMULATED)" in html
