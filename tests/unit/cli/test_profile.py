"""``inferlab profile`` in process: a manual profile stored for a config and point, JSON, the
store and the report section, tables, diff, errors, CPU mode; real traces
(tests/fixtures/traces)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from inferlab.report.render import build_report, render_html, render_markdown
from inferlab.store import Store
from support import FIXTURES
from support.cli import Cli


def test_cli_stores_a_manual_profile_for_a_config_and_point(cli: Cli, tmp_path: Path) -> None:
    trace = FIXTURES / "traces" / "vllm_cpu_decode_c1.pt.trace.json.gz"
    db = tmp_path / "db"
    with Store(db) as store, store.transaction():
        store.config_id(store.campaign_id("cap"), "baseline", engine="vllm", model="m")
    profile = ("profile", str(trace), "--db", str(db))
    r = cli(*profile, "--campaign", "cap", "--as", "baseline", "--point", "16")
    assert r.exit_code == 2 and "--point: expected a closed-loop load point" in r.stderr
    assert cli(*profile, "--as", "baseline").exit_code == 2  # where to? needs --campaign
    r = cli(*profile, "--campaign", "cap", "--as", "baseline", "--point", "C=1", "--format", "json")
    assert r.exit_code == 0, r.stderr
    with Store(db) as store:
        (row,) = store.analyses.profiles("cap")
        md = render_markdown(build_report(store, "cap"))
    cap = row.data.capture
    assert cap is not None and row.config == "baseline" and cap.point == "C=1"
    assert cap.mode == "cpu" and cap.engine == "vllm" and cap.rank is None and not cap.simulated
    assert "### baseline at C=1\n" in md and "CPU mode" in md


# --- ``inferlab profile`` on two real H200 Kineto traces: JSON, the store, tables, diff


TRACES = FIXTURES / "traces"
MOE = TRACES / "moe_decode_trace.json.gz"
GRAPH = TRACES / "cudagraph_decode_trace.json.gz"


# ----------------------------------------------------------------------------------- CLI


def test_cli_json_store_and_report_section(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    r = cli(
        "profile",
        str(GRAPH),
        "--format",
        "json",
        "--campaign",
        "prof",
        "--db",
        str(db),
        cwd=tmp_path,
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["mean_step"]["kernels"] == 813 and data["graph_launches"] == 16
    with Store(db) as store:
        (row,) = store.analyses.profiles("prof")
        assert row.name == GRAPH.name and row.data.segment == "decode"
        rep = build_report(store, "prof")
    md, html = render_markdown(rep), render_html(rep)
    assert "Where the time goes" in md and "GPU-bound" in md
    assert "| elementwise/copy |" in md and "<script" not in html
    assert "direct_copy_kernel_cuda" in html


def test_cli_tables_diff_and_errors(cli: Cli, tmp_path: Path) -> None:
    r = cli("profile", str(MOE), "--vs", str(GRAPH), "--top", "5", cwd=tmp_path)
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "kernels busy 4.67 of 20.3 ms per decode step (23%): launch-bound" in out
    assert "vectorized_gather_kernel<long>" in out and "45.2%" in out
    assert "64 on 132" in out  # an under-occupied grid
    assert "categories: B vs A (ms per step)" in out and "A = " in out
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel" "name": "k"}]}')
    r = cli("profile", str(bad), cwd=tmp_path)
    assert r.exit_code == 2
    assert "Traceback" not in r.stderr
    assert re.search(r"error: .*bad\.json: invalid JSON at byte 45 \(line 1, column 46\)", r.stderr)
    r = cli("profile", str(MOE), "--segment", "verify", cwd=tmp_path)
    assert r.exit_code == 2 and "--segment: expected decode, prefill or all" in r.stderr


# --- CPU mode: a real vLLM (CPU build) trace


FIX = FIXTURES / "traces"
VLLM_CPU = FIX / "vllm_cpu_decode_c1.pt.trace.json.gz"


def test_cli_json_in_cpu_mode(cli: Cli) -> None:
    r = cli("profile", str(VLLM_CPU), "--format", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["mode"] == "cpu" and d["mean_step"]["span_us"] > 0
    text = cli("profile", str(VLLM_CPU), "--top", "3", env={"COLUMNS": "160"}).stdout
    assert "CPU mode: no GPU activity" in text and "CPU ops (self time)" in text
