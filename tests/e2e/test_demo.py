"""``inferlab demo --sim``: the seed campaign on the reference engine's timing model.

The demo runs for real (its own servers and client, on the wall clock of this machine), so a
point can come out untrusted (client lag p99 over 1 ms on a busy machine). What is asserted:
the demo's structure (its configs, the OOM, its profiles and report), which is the timing
model's and does not depend on the machine; at every *trusted* point, the decisions the demo
documents (docs/design.md, examples/sim-dsv4.toml); at every untrusted point, that it is
labelled with its reason and yields no claim and no measured ratio. It runs in the parallel
pass, beside other tests: a busier machine makes more points untrusted, never a wrong claim. The same decisions, made
on the engine's model clock whatever the machine, are in tests/e2e/test_levers.py."""

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
from inferlab.report.comparison import Comparison
from inferlab.sim.model import step_ms
from inferlab.sim.presets import Levers, get_preset, resolve
from inferlab.store import Store
from inferlab.store.analyses import StoredAnalysis
from inferlab.store.bodies import Body

POINTS = ("C=1", "C=8", "C=16")


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
    assert all(status[c].startswith("measured") for c in ("baseline", "A", "B")), status
    assert status["B-first-try"].startswith("launch-failed")
    out = tmp_path / "inferlab-out" / "sim-dsv4"
    html = (out / "report.html").read_text()
    assert "SIMULATED" in html and "<svg" in html
    assert "Where the time goes" in html and "A at C=16 (SIMULATED)" in html
    assert "What to try next" in html  # the profile's levers: no trusted point needed
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
        runs = store.runs(campaign="sim-dsv4")
    assert {(r.config, r.label) for r in runs} == {
        (cfg, p) for cfg in ("baseline", "A", "B") for p in POINTS
    }
    trusted = {(r.config, r.label) for r in runs if r.trust == "trusted"}
    if _expected_rows(trusted):  # a prediction is checked where both sides are trusted
        assert "Predictions" in html
    print(f"demo: untrusted points: {sorted({(r.config, r.label) for r in runs} - trusted)}")
    _check_untrusted(c, runs)
    base1 = _check_profiles(profiles)
    _check_measured(c, trusted)
    _check_levers(decision, base1, trusted)


def _check_untrusted(c: Comparison, runs: list[Any]) -> None:
    """An untrusted point says why, and neither it nor a point compared with it claims."""
    for r in runs:
        if r.trust == "trusted":
            continue
        assert r.trust_reasons and all(x["reason"] and x["fix"] for x in r.trust_reasons)
        others = [cfg for cfg in c.configs if cfg != "baseline" and (cfg, r.label) in c.cells]
        cells = [c.cells[(cfg, r.label)] for cfg in (others if r.config == "baseline" else [])]
        # under [load] interleave a candidate is judged against the baseline's pass just
        # before it: only the cells judged against this (first) pass depend on its trust
        cells = [cell for cell in cells if not cell.interleaved]
        if r.config != "baseline":
            cells = [c.cells[(r.config, r.label)]]
        for cell in cells:
            assert cell.blocked is not None and cell.blocked.startswith("untrusted"), cell
            assert all(v.claim == "~" for v in cell.verdicts.values())


def _check_profiles(profiles: list[StoredAnalysis[Body]]) -> dict[str, Any]:
    """The seed's two profiles (SIMULATED, 8 ranks each for baseline and A): batch 1, and
    C=16; they come from the timing model's steps. Returns baseline's rank-0 profile at C=1."""
    assert sorted({(r.config, r.data.to_json()["capture"]["point"]) for r in profiles}) == [
        ("A", "C=1"),
        ("A", "C=16"),
        ("baseline", "C=1"),
        ("baseline", "C=16"),
    ]
    rank0 = {
        (r.config, r.data.to_json()["capture"]["point"]): r.data.to_json()
        for r in profiles
        if r.data.to_json()["capture"]["rank"] == 0
    }
    base1, base16 = rank0[("baseline", "C=1")], rank0[("baseline", "C=16")]
    assert base1["capture"]["simulated"] and base1["capture"]["ranks"] == 8
    top, occ = base1["kernel_rows"][0], base1["occupancy"][0]
    assert top["category"] == "attention" and occ["name"] == top["name"]
    assert occ["blocks"] == 64 and base1["sm_count"] == 170  # 1 batch × 64 heads
    # the batch stays near 16 while the client's turnaround is under one step (~5 ms at
    # --time-scale 0.05; a busy 2-CPU machine's p99 lag is 1.5-2.5 ms)
    assert _span_share(base16, "moe") == pytest.approx(0.39, abs=0.02)
    assert _span_share(base16, "attention") == pytest.approx(0.38, abs=0.02)
    return base1


def _check_measured(c: Comparison, trusted: set[tuple[str, str]]) -> None:
    """The story's numbers where they were measured by a trusted client: TPOT 94 → 88 ms at
    C=1 (0.05× on the model's clock at --time-scale 0.05), decode saturated by C=8. 5% of 4.7
    ms is 0.235 ms, three and a half times the most a client whose lag p99 is under 1 ms adds
    to a TPOT over 15 gaps (1 ms / 15)."""
    for cfg, want in (("baseline", 4.7), ("A", 4.4)):
        if (cfg, "C=1") in trusted:
            assert c.cells[(cfg, "C=1")].values["tpot_ms"] == pytest.approx(want, rel=0.05)
    if all(("baseline", p) in trusted for p in POINTS):
        assert c.saturation["baseline"].sentence.startswith("saturated by C=8")


def _span_share(profile: dict[str, Any], category: str) -> float:
    """A category's GPU time / the decode span, summed here from the stored profile's rows."""
    t = sum(r["time_us"] for r in profile["categories"] if r["name"] == category)
    return float(t) / float(profile["span_us"])


def _expected_rows(trusted: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The Predictions table's rows: A against baseline at both profiled points, B against A
    at every point, each only where both sides are trusted (an untrusted point carries no
    measured ratio)."""
    a = [("A", p) for p in ("C=1", "C=16") if {("A", p), ("baseline", p)} <= trusted]
    b = [("B", p) for p in POINTS if {("B", p), ("A", p)} <= trusted]
    return sorted(a + b)


def _b_vs_a(rows: dict[tuple[str, str], Any], trusted: set[tuple[str, str]]) -> None:
    """With none of A's points trusted, B's closest measured config is the baseline: a table
    that is not the demo's story (its own rows, then, are not checked here)."""
    if not any(("A", p) in trusted for p in POINTS):
        for key in [k for k in rows if k[0] == "B"]:
            del rows[key]


def _check_levers(d: Decision, base1: dict[str, Any], trusted: set[tuple[str, str]]) -> None:
    """What `inferlab levers` says from the demo's own store (issue 15's "what it must show")."""
    assert d.simulated
    # 1. the under-occupied attention kernel is the first lever, near 63% at C=1 (the profile)
    first = d.levers["baseline"][0]
    assert first.kind == "kernel" and first.title == "attention kernel"
    (p1,) = [p for p in first.points if p.label == "C=1"]
    assert p1.share == pytest.approx(0.63, abs=0.03)
    assert p1.share == pytest.approx(_span_share(base1, "attention"), rel=0.05)
    assert "64 blocks on 170 SMs" in first.summary
    rows = {(r.config, r.label): r for r in d.predictions}
    _b_vs_a(rows, trusted)
    assert sorted(rows) == _expected_rows(trusted), (sorted(rows), sorted(trusted))
    # 2. A's line (FP8 GEMM + NCCL, the bound if free): the timing model's own A saves 6.4% of
    # a batch-1 step, within the 7.8% its kernels take in the profile, by at most 2 points
    s = _span_share(base1, "fp8_gemm") + _span_share(base1, "communication")
    preset = get_preset("dsv4-flash-8gpu")
    model_a = resolve(preset, Levers(tuned_fp8=True, nccl_proto="LL"))
    saved = 1 - step_ms(model_a, 1) / step_ms(resolve(preset, Levers()), 1)
    assert saved <= s <= saved + 0.02, (s, saved)
    if ("A", "C=1") in rows:
        a1 = rows[("A", "C=1")]
        assert a1.kinds == ["fp8-gemm", "comm"] and a1.low is None and a1.high is not None
        assert a1.high == pytest.approx(1 / (1 - s), rel=1e-6)
    # 3. speculative decoding helps at C=1 and not from C=8, as B measured: its band is the
    # baseline's, at the baseline's trusted points
    spec = next((lv for lv in d.levers["baseline"] if lv.kind == "spec-decode"), None)
    if not any(("baseline", p) in trusted for p in POINTS):
        assert spec is None  # no band from a baseline with no trusted point
    else:
        assert spec is not None
        low = {p.concurrency: p.low for p in spec.points}
        if ("baseline", "C=1") in trusted:
            assert low[1] is not None and low[1] >= HELP_THRESHOLD
            assert "helps at C=1" in spec.summary
        assert all(v is not None and v < HELP_THRESHOLD for c, v in low.items() if c >= 8)
        saturated = [c for c in low if c >= 8]
        if saturated:  # the band's first point without help, after the ones that help
            first = f"C={min(saturated)} (×"
            said = f"not from {first}" if 1 in low else f"does not help from {first}"
            assert said in spec.summary, spec.summary
    b = {p: r for (cfg, p), r in rows.items() if cfg == "B"}
    assert all(r.kinds == ["spec-decode"] and r.measured is not None for r in b.values())
    if "C=1" in b:  # B helps at C=1 ...
        assert b["C=1"].measured is not None and b["C=1"].measured.low > 1.0
    # ... and no help of 5% or more from C=8 can be claimed: the measured interval reaches
    # below the threshold (the sim's B at C=8 measured ×1.064 [1.001, 1.086] on a quiet machine)
    for p in ("C=8", "C=16"):
        if p in b:
            m = b[p].measured
            assert m is not None and m.low < HELP_THRESHOLD, (p, m)
    # 4. A's Amdahl bound holds against what was measured (the timing model's A saves a fixed
    # share of every step); a speculative-decoding band is the baseline's sweep extrapolated to
    # B's verify steps, read on this machine's wall clock: a band missed on a loaded machine
    # (drift between the configs' passes; once in a fresh-clone run beside 6 other jobs) must
    # say by how much, it is not a failure of the demo (the verdicts themselves are tested on
    # the model clock in tests/e2e/test_levers.py)
    off = [(r.config, r.label, r.verdict, r.detail) for r in rows.values()
           if r.verdict != "consistent"]  # fmt: skip
    assert all(cfg != "A" for cfg, *_ in off), off
    assert all(v in ("above", "below") and "measured ×" in d for _, _, v, d in off), off
