"""``inferlab levers`` against a stored campaign built the way a user builds one: a real
``inferlab run`` on the reference engine (the seed campaign's preset, time-scaled; its servers
on threads of this process, its points read on the engine's model clock, so the predictions
are checked against the timing model's measurements, not the machine's), the H200 fixture
traces stored with ``inferlab profile --campaign --config --point``, a real SGLang log's
findings — then the levers, the stored predictions, the Predictions table and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferlab.campaign.drivers.runner import run_campaign
from inferlab.campaign.parts.clock import ModelClock
from inferlab.campaign.parts.launch import InProcessSim
from inferlab.levers import Decision, LeverOptions, decide, stored_predictions
from inferlab.logs import store_log_findings
from inferlab.report.render import build_report, render_html, render_markdown
from inferlab.store import Store
from support import FIXTURES
from support.campaign import write_campaign
from support.campaigns import EAGLE, SEED
from support.cli import Cli, CliResult, run_cli

TRACES = FIXTURES / "traces"
MOE_LOG = (
    FIXTURES / "engine_logs/sglang_fp8_default/sglang-0.5.8post1_moe-config-fallback-"
    "triton_h100.log"
)

FP8_LOG = FIXTURES / "engine_logs/sglang_fp8_default/sglang-pr5675_h20-w8a8-default-single-line.log"

#: the seed story's campaign (baseline first, alone; then A, B-first-try, B), 1.5 s a point
DECIDE = dict(
    name="decide",
    args=[*SEED, "--time-scale", "0.1"],
    load={
        "workload": {"kind": "random", "input_tokens": 64, "output_tokens": 16},
        "concurrency": [1, 8, 16],
        "requests": None,
        "duration_s": 1.5,
    },
)
LEVERS = [
    {"name": "A", "extends": "baseline", "args": ["--tuned-fp8"], "env": {"NCCL_PROTO": "LL"}},
    {"name": "B-first-try", "extends": "A", "args": EAGLE},
    {
        "name": "B",
        "extends": "B-first-try",
        "set": {"--mem-fraction-static": "0.60", "--cuda-graph-max-bs": "16"},
    },
]


def _ok(*args: str) -> CliResult:
    """``inferlab ARGS...`` in process, which must succeed (the module fixture's steps)."""
    r = run_cli(*args)
    assert r.exit_code == 0, r.stderr[-2000:]
    return r


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """baseline measured; profiles and a log stored; predictions recorded; then A, B measured."""
    tmp = tmp_path_factory.mktemp("levers")
    path = tmp / "db"
    first = write_campaign(tmp / "first.toml", **DECIDE)
    full = write_campaign(tmp / "full.toml", **DECIDE, config=[{"name": "baseline"}, *LEVERS])
    with Store(path) as store:
        run_campaign(first, store=store, launcher=InProcessSim(), clock=ModelClock())
    db_ = ["--campaign", "decide", "--db", str(path)]
    _ok(
        "profile",
        str(TRACES / "cudagraph_decode_trace.json.gz"),
        *db_,
        "--as",
        "baseline",
        "--point",
        "C=1",
    )
    _ok(
        "profile",
        str(TRACES / "fp8_decode_default.json.gz"),
        *db_,
        "--as",
        "baseline",
        "--point",
        "C=16",
    )
    rules = tmp / "moe.toml"
    rules.write_text('[[rule]]\ncategory = "moe"\npattern = "vectorized_gather_kernel"\n')
    _ok(
        "profile",
        str(TRACES / "moe_decode_trace.json.gz"),
        *db_,
        "--as",
        "qwen-moe",
        "--point",
        "C=8",
        "--categories",
        str(rules),
    )
    _ok("profile", str(TRACES / "fp8_decode_tuned.json.gz"), *db_)  # no config, no point
    with Store(path) as store:
        gid = store.db.execute("SELECT id FROM configs WHERE name='qwen-moe'").fetchone()[0]
        store_log_findings(store, MOE_LOG, campaign="decide", config_id=gid)
    out = _ok("levers", "decide", "--db", str(path))  # ranks and stores the predictions
    assert "stored" in out.stdout
    with Store(path) as store:
        res = run_campaign(
            full, store=store, resume=True, launcher=InProcessSim(), clock=ModelClock()
        )
    assert {o.config: o.status for o in res.outcomes} == {
        "baseline": "skipped",
        "A": "measured",
        "B-first-try": "launch-failed",
        "B": "measured",
    }
    with Store(path) as store:  # a real SGLang log naming an untuned shape, for A (no profile)
        gid = store.db.execute("SELECT max(id) FROM configs WHERE name='A'").fetchone()[0]
        store_log_findings(store, FP8_LOG, campaign="decide", config_id=gid)
        # lever-applied evidence in the shape `inferlab run` records it (CONTRACTS.md, i13)
        bid = store.db.execute("SELECT max(id) FROM configs WHERE name='B'").fetchone()[0]
        items = [
            {
                "item": "--speculative-algorithm",
                "kind": "flag",
                "status": "applied",
                "evidence": "line 3: speculative decoding EAGLE",
                "source": "launch log",
            },
            {
                "item": "--cuda-graph-max-bs",
                "kind": "flag",
                "status": "unknown",
                "evidence": "no log line names it",
                "source": None,
            },
        ]
        with store.transaction():
            store.add_verification(bid, "lever", False, {"items": items})
    return path


@pytest.fixture(scope="module")
def decision(db: Path) -> Decision:
    with Store(db) as store:
        return decide(store, "decide")


def _profile(db: Path, name: str) -> dict[str, Any]:
    with Store(db) as store:
        (p,) = [a.data.to_json() for a in store.analyses("profile", "decide") if a.name == name]
    return p


def test_levers_are_ranked_by_ceiling_with_evidence(db: Path, decision: Decision) -> None:
    assert decision.simulated and decision.baseline == "baseline"
    base = decision.levers["baseline"]
    kinds = [lv.kind for lv in base]
    assert kinds[:2] == ["fp8-gemm", "spec-decode"]
    ceilings = [lv.ceiling for lv in base if lv.ceiling is not None]
    assert ceilings == sorted(ceilings, reverse=True)
    fp8 = base[0]
    # computed as the profile command does: the fp8_gemm row's own Amdahl bound, at C=16
    row = next(
        r
        for r in _profile(db, "fp8_decode_default.json.gz")["categories"]
        if r["name"] == "fp8_gemm"
    )
    (c16,) = [p for p in fp8.points if p.label == "C=16"]
    assert c16.high == pytest.approx(row["amdahl_free"]) and c16.at_2x == pytest.approx(
        row["amdahl_2x"]
    )
    assert fp8.summary.startswith(
        "tune FP8 GEMM: fp8_gemm is 0.0% of decode at C=1 and 39.1% at C=16 → at most "
        "×1.000 (+0.0% TPOT) at C=1, ×1.642 (−39.1% TPOT) at C=16 even if free; 5 shapes "
        "untuned (log lines "
    )
    assert "`inferlab tune fp8-gemm --from-log " in fp8.summary
    assert any("16 blocks on 132 SMs" in e for e in fp8.evidence)  # the grid, from the profile
    floor = next(e for e in fp8.evidence if e.startswith("TPOT at C=16: "))
    measured, best = (float(x.split(" ms")[0]) for x in floor.split(": ")[1].split("→ at best "))
    # both printed to 0.1 ms: rounding error ≤ 0.05 / high + 0.05
    assert best == pytest.approx(measured / c16.high, abs=0.05 / c16.high + 0.051)
    # the campaign's recon ran without the engine's Python: it says what it could not see
    assert "recon: the engine's tuned fp8_gemm directory was not scanned" in fp8.evidence[-1]
    assert base[-1].kind == "concurrency" and base[-1].summary.startswith(
        "concurrency: saturated by C=8"
    )
    assert "more concurrency will not help beyond C=8" in base[-1].summary


def test_host_bound_profile_uses_the_span_share(decision: Decision) -> None:
    moe = decision.levers["qwen-moe"]
    assert [lv.kind for lv in moe] == ["cuda-graphs", "moe"]
    graphs, fused = moe
    assert graphs.summary.startswith("CUDA graphs / host overhead: the GPU idles 77.0% of decode")
    assert "run decode in CUDA graphs" in graphs.action
    # vectorized_gather is 45.2% of kernel time but 10.4% of the 20.3 ms step: GPU-only ×1.116,
    # not ×1.8; and the eager step's host loop fills the step (its step range 20.2 ms), so the
    # host's floor leaves ×1.002 (unprofiled the step took 10.8 ms against 4.67 ms of kernels:
    # host-bound still, a faster gather cannot shorten it)
    (pt,) = fused.points
    assert pt.share == pytest.approx(0.104, abs=0.002) and pt.high == pytest.approx(1.002, abs=1e-3)
    assert pt.low == pytest.approx(1.0) and "GPU-only Amdahl ×1.116" in pt.note
    assert "the host's floor" in fused.summary
    assert "untuned (log lines 2, 3)" in fused.summary and "benchmark_moe.py" in fused.action
    # a profile stored without a config or a point is still ranked, at an unknown point
    loose = decision.levers[""]
    assert loose[0].points[0].label == "?"
    assert "at an unknown load point" in loose[0].summary


def test_speculative_decoding_band_from_the_baseline(decision: Decision) -> None:
    (spec,) = [lv for lv in decision.levers["A"] if lv.kind == "spec-decode"]
    # τ from B's own log (B-first-try never ran), k from B's flags
    assert spec.title.startswith("speculative decoding (eagle, k=1, τ=1.")
    assert "measured on B" in spec.evidence[1]
    assert "helps at C=1 (×1." in spec.summary and "not from C=8" in spec.summary
    assert spec.summary.split("→")[0].endswith("decode saturates by C=8 ")
    c1, c8, c16 = spec.points
    assert c1.low is not None and c1.low >= 1.05 and c8.low is not None and c8.low < 1.05
    assert c16.extrapolated and not c1.extrapolated
    assert not [lv for lv in decision.levers["B"] if lv.kind == "spec-decode"]  # B runs it


def test_untuned_shapes_without_a_profile_say_what_is_missing(decision: Decision) -> None:
    (fp8,) = [lv for lv in decision.levers["A"] if lv.kind == "fp8-gemm"]
    assert fp8.ceiling is None and fp8.model == "none"
    assert [lv.kind for lv in decision.levers["A"]] == ["spec-decode", "fp8-gemm", "concurrency"]
    assert fp8.summary.startswith(
        "tune FP8 GEMM: 1 shape untuned (log lines 1); no profile to bound it: capture one"
    )
    assert "N=2112,K=7168" in fp8.evidence[0]


def test_predictions_against_measurements(decision: Decision) -> None:
    rows = {(r.config, r.label): r for r in decision.predictions}
    a1 = rows[("A", "C=1")]
    assert a1.reference == "baseline" and a1.kinds == ["fp8-gemm", "comm"]
    # the C=1 profile (a dense Llama trace) has no FP8 GEMM and no NCCL: A's measured −6% TPOT
    # is impossible by Amdahl, and the suspects are named
    assert a1.high == pytest.approx(1.0) and a1.verdict == "above", a1.detail
    assert any(s.startswith("noise:") for s in a1.suspects)
    # the run stored A's lever evidence: NCCL_PROTO is unproven (no NCCL_DEBUG=INFO), a suspect
    assert any(s.startswith("lever env NCCL_PROTO: unknown") for s in a1.suspects), a1.suspects
    a16 = rows[("A", "C=16")]
    assert a16.verdict == "below", a16.detail
    assert "of its ceiling (normal for a bound)" in a16.detail
    assert a16.made_at is not None and a16.preceded is True  # stored before A was measured
    assert a16.fresh == ["comm"]  # no NCCL lever was listed, so that part is computed now
    assert ("A", "C=8") not in rows
    assert any(n.startswith("A at C=8: no prediction for fp8-gemm, comm") for n in decision.notes)
    for c in ("C=1", "C=8", "C=16"):
        b = rows[("B", c)]
        assert b.reference == "A" and b.kinds == ["spec-decode"]
        assert b.verdict == "consistent", (c, b.detail)
        assert b.also_changed == ["flag --mem-fraction-static", "flag --cuda-graph-max-bs"]
        assert b.made_at is not None and b.preceded is False  # τ came from B itself
        assert b.detail.endswith("; lever --cuda-graph-max-bs: unknown (no log line names it)")
    assert rows[("B", "C=16")].extrapolated


def test_predictions_are_stored_once_with_their_time(db: Path) -> None:
    with Store(db) as store:
        stored = stored_predictions(store, "decide")
    keys = [s.key for s in stored]
    assert len(keys) == len(set(keys))  # unchanged predictions are not stored again
    assert "fp8-gemm:baseline" in keys and "spec-decode:A" in keys
    assert all(s.made_at and s.version == 1 for s in stored)
    fp8 = next(s for s in stored if s.key == "fp8-gemm:baseline")
    assert fp8.model == "amdahl" and {p.label for p in fp8.points} == {"C=1", "C=16"}


def test_cli_json_options_and_refusals(cli: Cli, db: Path, tmp_path: Path) -> None:
    r = cli(
        "levers",
        "decide",
        "--db",
        str(db),
        "--format",
        "json",
        "--config",
        "A",
        "--accept-length",
        "1.3",
    )
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["simulated"] is True and list(out["levers"]) == ["A"]
    (spec,) = [lv for lv in out["levers"]["A"] if lv["kind"] == "spec-decode"]
    assert "τ=1.30" in spec["title"] and "given (--accept-length)" in spec["evidence"][1]
    assert {p["config"] for p in out["predictions"]} == {"A", "B"}
    bad = cli("levers", "decide", "--db", str(db), "--accept-length", "2.5")
    assert bad.exit_code == 2 and "expected 1 < τ ≤ 2" in bad.stderr
    bad = cli("levers", "decide", "--db", str(db), "--accept-length", "1")
    assert bad.exit_code == 2 and "1 < τ ≤ 2" in bad.stderr
    bad = cli("levers", "decide", "--db", str(db), "--config", "nope")
    assert (
        bad.exit_code == 2 and "'nope' is not a config" in bad.stderr and "baseline" in bad.stderr
    )
    empty = tmp_path / "empty.db"
    with Store(empty) as store, store.transaction():
        store.config_id(store.campaign_id("bare"), "baseline", engine="sim", model=None)
    bad = cli("levers", "bare", "--db", str(empty))
    assert bad.exit_code == 2
    assert (
        "nothing to rank: capture a profile (`[profile]`) or store one with `inferlab "
        "profile --campaign`" in " ".join(bad.stderr.split())
    )
    bad = cli(
        "profile",
        str(TRACES / "fp8_decode_tuned.json.gz"),
        "--campaign",
        "x",
        "--db",
        str(empty),
        "--point",
        "16",
    )
    assert bad.exit_code == 2 and "--point: expected a closed-loop load point such as C=16" in (
        bad.stderr
    )
    with Store(db) as store, pytest.raises(Exception, match="--draft-cost"):
        decide(store, "decide", LeverOptions(draft_cost=1.5))


def test_report_has_what_to_try_next_and_predictions(db: Path) -> None:
    with Store(db) as store:
        rep = build_report(store, "decide")
    md, html = render_markdown(rep), render_html(rep)
    assert "## What to try next" in md and "## Predictions" in md
    body = md.split("## What to try next", 1)[1]
    assert body.index("### Levers for baseline (baseline)") < body.index("1. tune FP8 GEMM")
    assert "SIMULATED" in body.split("## Predictions", 1)[0]
    assert "| FP8 GEMM + NCCL | A vs baseline | C=1 | ≤ ×1.000 |" in md
    assert "ABOVE THE BOUND" in md and "before the measurement" in md
    assert 'id="levers"' in html and 'id="predictions"' in html and 'class="fail"' in html
