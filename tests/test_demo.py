"""``inferlab demo --sim``: the seed campaign on the reference engine's timing model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferlab.levers import Decision, decide
from inferlab.levers.specdec import HELP_THRESHOLD
from inferlab.report.compare import build_comparison
from inferlab.store import Store

pytestmark = pytest.mark.serial  # the demo's verdicts are timed on a quiet machine


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
        decision = decide(store, "sim-dsv4")
        untrusted = [
            (r.config, r.label, r.trust_reasons)
            for r in store.runs(campaign="sim-dsv4")
            if r.trust != "trusted"
        ]
    tpot = {cfg: c.cells[(cfg, "C=1")].values["tpot_ms"] for cfg in ("baseline", "A")}
    # the story's 94 → 88 ms, on the model's clock at --time-scale 0.1
    assert tpot["baseline"] == pytest.approx(9.4, rel=0.05)
    assert tpot["A"] == pytest.approx(8.8, rel=0.05)
    assert c.saturation["baseline"].sentence.startswith("saturated by C=8")
    # the seed's two profiles (SIMULATED, 8 ranks each for baseline and A): batch 1, and C=16
    assert sorted({(r["config"], r["data"]["capture"]["point"]) for r in profiles}) == [
        ("A", "C=1"),
        ("A", "C=16"),
        ("baseline", "C=1"),
        ("baseline", "C=16"),
    ]
    rank0 = {
        (r["config"], r["data"]["capture"]["point"]): r["data"]
        for r in profiles
        if r["data"]["capture"]["rank"] == 0
    }
    base1, base16 = rank0[("baseline", "C=1")], rank0[("baseline", "C=16")]
    assert base1["capture"]["simulated"] and base1["capture"]["ranks"] == 8
    top, occ = base1["kernel_rows"][0], base1["occupancy"][0]
    assert top["category"] == "attention" and occ["name"] == top["name"]
    assert occ["blocks"] == 64 and base1["sm_count"] == 170  # 1 batch × 64 heads
    assert _span_share(base16, "moe") == pytest.approx(0.39, abs=0.02)  # the later profile
    assert _span_share(base16, "attention") == pytest.approx(0.38, abs=0.02)
    at16 = {cfg: c.cells[(cfg, "C=16")].values["tpot_ms"] for cfg in ("baseline", "A")}
    f16 = _span_share(base16, "fp8_gemm") + _span_share(base16, "communication")
    assert at16["baseline"] / at16["A"] <= 1 / (1 - f16)  # A cannot beat Amdahl on its kernels
    assert "Where the time goes" in html and "A at C=16 (SIMULATED)" in html
    assert "What to try next" in html and "Predictions" in html
    _check_levers(decision, base1, tpot, untrusted)


def _span_share(profile: dict[str, Any], category: str) -> float:
    """A category's GPU time / the decode span, summed here from the stored profile's rows."""
    t = sum(r["time_us"] for r in profile["categories"] if r["name"] == category)
    return float(t) / float(profile["span_us"])


def _check_levers(
    d: Decision, base1: dict[str, Any], tpot: dict[str, float], untrusted: list[Any]
) -> None:
    """What `inferlab levers` says from the demo's own store (issue 15's "what it must show")."""
    assert d.simulated
    # 1. the under-occupied attention kernel is the first lever, near 63% at C=1
    first = d.levers["baseline"][0]
    assert first.kind == "kernel" and first.title == "attention kernel"
    (p1,) = [p for p in first.points if p.label == "C=1"]
    assert p1.share == pytest.approx(0.63, abs=0.03)
    assert p1.share == pytest.approx(_span_share(base1, "attention"), rel=0.05)
    assert "64 blocks on 170 SMs" in first.summary
    rows = {(r.config, r.label): r for r in d.predictions}
    # the Predictions table: A (at both profiled points) and B (every point); a point missing
    # here is one with no measured ratio (an untrusted point carries none: say which)
    want = [("A", "C=1"), ("A", "C=16"), ("B", "C=1"), ("B", "C=16"), ("B", "C=8")]
    assert sorted(rows) == want, (sorted(rows), untrusted)
    # 2. A's line (FP8 GEMM + NCCL, the bound if free) ≥ A's measured TPOT change, within 2 points
    a1 = rows[("A", "C=1")]
    assert a1.kinds == ["fp8-gemm", "comm"] and a1.low is None and a1.high is not None
    s = _span_share(base1, "fp8_gemm") + _span_share(base1, "communication")
    assert a1.high == pytest.approx(1 / (1 - s), rel=1e-6)
    measured = 1 - tpot["A"] / tpot["baseline"]
    assert measured <= s <= measured + 0.02, (s, measured)
    # 3. speculative decoding helps at C=1 and not from C=8, as B measured at every point
    spec = next(lv for lv in d.levers["baseline"] if lv.kind == "spec-decode")
    low = {p.concurrency: p.low for p in spec.points}
    assert low[1] is not None and low[1] >= HELP_THRESHOLD
    assert all(v is not None and v < HELP_THRESHOLD for c, v in low.items() if c >= 8)
    assert "helps at C=1" in spec.summary and "not from C=8" in spec.summary
    b = {c: rows[("B", f"C={c}")] for c in (1, 8, 16)}
    assert all(r.kinds == ["spec-decode"] and r.measured is not None for r in b.values())
    assert b[1].measured is not None and b[1].measured.low > 1.0  # B helps at C=1 ...
    # ... and no help of 5% or more from C=8 can be claimed: the measured interval reaches
    # below the threshold (the sim's B at C=8 measured ×1.064 [1.001, 1.086] on a quiet machine)
    assert all(r.measured is not None and r.measured.low < HELP_THRESHOLD for r in (b[8], b[16]))
    # 4. every prediction consistent with what was measured
    assert all(r.verdict == "consistent" for r in d.predictions), [
        (r.config, r.label, r.detail) for r in d.predictions
    ]
