"""``inferlab report`` on a real store filled by real sweeps against the reference engine, and
the HTML opened by a real headless browser."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from inferlab.campaign.parts.bench import bench_with_record
from inferlab.campaign.parts.clock import ModelClock
from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.errors import ConfigError
from inferlab.report.render import build_report, render_html, render_markdown, write_report
from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support import ROOT
from support.browser import browser_dom
from support.cli import Cli
from support.simproc import start_sim_thread

EVIL = "<script>alert(1)</script>"
FAST = f"fast{EVIL}"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Campaign 'rep' (read on the engine's model clock): base (ITL 6 ms) and FAST (ITL 3 ms)
    at C=1,2,4; a third config that
    failed to launch, with a log tail carrying a script tag; a passed probe."""
    tmp = tmp_path_factory.mktemp("rep")
    tok = WordTokenizer().save_hf(tmp / "tok")
    path = tmp / "rep.db"
    for itl, name in (("6", "base"), ("3", FAST)):
        with start_sim_thread("--ttft-ms", "5", "--itl-ms", itl) as sim:
            cfg = BenchConfig(
                url=sim.url,
                engine="sim",
                concurrency=[1, 2, 4],
                requests=16,
                tokenizer=tok,
                workload=WorkloadSpec(input_tokens=8, output_tokens=12),
                lag_limit_ms=1e6,  # the report's verdict cells are under test, not trust
            )
            bench_with_record(cfg, db=path, campaign="rep", config=name, clock=ModelClock())
    with Store(path) as store, store.transaction():
        cid = store.campaign_id("rep")
        bad = store.config_id(
            cid,
            "mtp",
            engine="sglang",
            model=f"model{EVIL}",
            argv=["--speculative-algorithm", "EAGLE", "--mem-fraction-static", "0.70"],
            env={"NCCL_PROTO": "LL"},
        )
        store.add_verification(
            bad,
            "launch",
            False,
            {
                "kind": "cuda-oom",
                "message": "CUDA out of memory during CUDA graph capture",
                "remedy": "lower --mem-fraction-static (0.70 → 0.60) and --cuda-graph-max-bs",
                "tail": ["Capturing cuda graph bs=16", f"torch.OutOfMemoryError {EVIL}"],
                "log_path": "/tmp/logs/mtp.log",
            },
        )
        (base,) = store.db.execute("SELECT id FROM configs WHERE name='base'").fetchone()
        store.add_verification(base, "launch", True, {"log_path": "/tmp/b.log", "ready_s": 49.2})
        store.add_verification(
            base, "probe", True, {"kind": "probe", "passed": True, "message": "answered Paris"}
        )
    return path


def test_markdown_has_verdicts_saturation_and_sections(db: Path) -> None:
    with Store(db) as store:
        rep = build_report(store, "rep")
    assert rep.simulated and rep.baseline == "base"
    assert rep.comparison is not None and rep.comparison.labels == ["C=1", "C=2", "C=4"]
    assert [c.config for c in rep.curves] == ["base", FAST]
    assert ("base", "C=4") in rep.ttft and (FAST, "C=1") in rep.itl
    assert rep.itl[(FAST, "C=1")].p50 == pytest.approx(3.0, rel=0.3)
    md = render_markdown(rep)
    assert "SIMULATED" in md
    assert "### output throughput (tok/s)" in md and "### median TPOT (ms)" in md
    assert "| config | C=1 | C=2 | C=4 |" in md
    row = next(line for line in md.splitlines() if line.startswith("| fast&lt;script"))
    assert "undecided" in row and "×" in row  # one launch each: no claim, the ratio shown
    assert "### Saturation" in md and "- **base**: " in md and ("saturated" in md)
    assert "TPOT = (E2E − TTFT) / (output tokens − 1)" in md
    assert "cuda-oom" in md and "lower --mem-fraction-static" in md
    # a launch that came up is a passed check, not a launch failure
    assert [f.config for f in rep.launch_failures] == ["mtp"]
    assert "| base | launch | pass | ready in 49.2 s |" in md
    assert "answered Paris" in md and md.count("### base (baseline)") == 1
    assert "+ --speculative-algorithm EAGLE" in md and "+ NCCL_PROTO=LL" in md
    assert "## Measurement-quality warnings" in md and "few-samples" in md
    assert EVIL not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md


def test_html_is_self_contained_and_escaped(db: Path) -> None:
    with Store(db) as store:
        html = render_html(build_report(store, "rep"))
    assert html.count("<svg") == 4 and "<polyline" in html
    assert "<script" not in html.lower()
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5
    for attr in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', html):
        assert attr.startswith("#"), attr
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html and "@import" not in html and "url(" not in html
    assert "SIMULATED" in html and 'id="def-tpot_ms"' in html


def test_server_metrics_are_shown(db: Path) -> None:
    with Store(db) as store:
        rep = build_report(store, "rep")
    rep.runs[0].server.update({"spec_accept_length": 1.73, "max_kv_cache_usage": 0.42})
    md, html = render_markdown(rep), render_html(rep)
    assert "spec accept length (tokens/step)" in md and "1.73" in md
    assert "max KV-cache usage" in html and "0.42" in html


def test_unknown_campaign_and_baseline(db: Path) -> None:
    with Store(db) as store:
        with pytest.raises(ConfigError, match=r"no campaign 'nope'.*campaigns: rep"):
            build_report(store, "nope")
        with pytest.raises(ConfigError, match="--baseline"):
            build_report(store, "rep", baseline="zzz")
        rep = build_report(store, "rep", baseline=FAST)
        assert rep.comparison is not None and rep.comparison.baseline == FAST
        only_failed = build_report(store, "rep", baseline="mtp")
        assert only_failed.comparison is None and "no finished runs" in str(
            only_failed.no_comparison
        )
        assert "No verdict table" in render_markdown(only_failed)


def test_cli_writes_both_files(cli: Cli, db: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = cli("report", "rep", "--db", str(db), "--out-dir", str(out))
    assert p.exit_code == 0, p.stderr
    assert p.stdout.split() == [str(out / "report.md"), str(out / "report.html")]
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    bad = cli("report", "zzz", "--db", str(db))
    assert bad.exit_code == 2 and "campaigns: rep" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_real_browser_renders_without_errors(db: Path, tmp_path: Path) -> None:
    with Store(db) as store:
        _, html = write_report(store, "rep", tmp_path / "out")
    dom = browser_dom(html, tmp_path)
    assert "Campaign report: rep" in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "<script" not in dom.lower()


def test_every_section_in_one_report_renders_safely(cli: Cli, db: Path, tmp_path: Path) -> None:
    """Log findings, recon, a profile and a tuning run stored with the campaign (each through
    its own command, on real inputs: a real OOM log carrying a script tag, the real H200 traces,
    the saved two-GPU tuning run) all appear, escaped, in one page a real browser opens."""
    path = tmp_path / "all.db"
    shutil.copy(db, path)
    log = tmp_path / "server.log"
    oom = ROOT / "tests/fixtures/engine_logs/oom_graph_capture"
    log.write_text(
        (oom / "sglang-issue5285_deepep-h20-capture-oom-traceback.log").read_text()
        + f"[2025-01-01 00:00:00 TP0] NCCL error: {EVIL}\n"
    )
    from inferlab.logs import store_log_findings

    with Store(path) as store:
        cid = store.db.execute("SELECT id FROM configs WHERE name='base'").fetchone()[0]
        assert store_log_findings(store, log, campaign="rep", config_id=cid) is not None
    trace = ROOT / "tests/fixtures/traces/fp8_decode_default.json.gz"
    tuned = ROOT / "benchmarks/fp8_gemm_tune_h200x2/tune_cli_2gpu.json"
    for args in (
        ["profile", str(trace), "--campaign", "rep", "--db", str(path)],
        ["recon", "--campaign", "rep", "--db", str(path), "--device", "NVIDIA H200"],
        [
            "tune",
            "fp8-gemm",
            "--from-results",
            str(tuned),
            "--out-dir",
            str(tmp_path / "t"),
            "--campaign",
            "rep",
            "--db",
            str(path),
        ],
    ):
        r = cli(*args)
        assert r.exit_code == 0, (args, r.stderr[-2000:])
    with Store(path) as store:
        md, html = write_report(store, "rep", tmp_path / "out")
    text = md.read_text()
    for title in (
        "Log findings",
        "Environment recon",
        "Where the time goes",
        "FP8 GEMM tuning",
    ):
        assert f"## {title}" in text, title
    assert "OOM during CUDA-graph capture" in text and "_w8a8_block_fp8_matmul" in text
    dom = browser_dom(html, tmp_path)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script" not in dom.lower()
    for key in ("findings", "recon", "profile", "tuning"):
        assert f'id="{key}"' in dom, key
