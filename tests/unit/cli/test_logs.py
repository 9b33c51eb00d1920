"""``inferlab logs`` in process: the table, JSON and exit codes on real engine logs."""

from __future__ import annotations

import json
from pathlib import Path

from support import FIXTURES
from support.cli import Cli

FIX = FIXTURES / "engine_logs"
CPU = FIXTURES / "vllm_cpu"
OOM = FIX / "oom_graph_capture"
VLLM = FIX / "vllm_metrics_log"


# -- CLI --------------------------------------------------------------------------------------


def test_cli_table_json_and_exit_codes(cli: Cli, tmp_path: Path) -> None:
    r = cli("logs", "analyze", str(OOM / "sglang-issue5285_deepep-h20-capture-oom-traceback.log"))
    assert r.exit_code == 0, r.stderr
    assert "oom-graph-capture" in r.stdout and "OOM during CUDA-graph capture" in r.stdout
    r = cli(
        "logs",
        "analyze",
        str(VLLM / "tt-inference-server-246_vllm-v0-metrics-py-wrapped.log"),
        "--format",
        "json",
    )
    assert r.exit_code == 0
    (doc,) = json.loads(r.stdout)["files"]
    assert doc["engine"] == "vllm" and doc["series"]["total"] == 6
    assert doc["series"]["points"][0] == {
        "line": 1,
        "kind": "stats",
        "time": "07-03 23:23:42",
        "running": 32,
        "queued": 0,
        "gen_tps": 616.1,
        "kv_usage": 0.17600000000000002,
        "prompt_tps": 0.0,
    }
    prom = FIX / "prometheus/sglang-pr1853_early-sglang-metrics-name-label.log"
    r = cli("logs", "analyze", str(prom), str(CPU / "startup_ok.log"))
    assert r.exit_code == 2 and "perf-advice" in r.stdout
    assert "no SGLang, vLLM or llama.cpp lines among 15 lines" in r.stderr
    bad = tmp_path / "x.bz2"
    bad.write_bytes(b"BZh91AY&SY" + b"\x00" * 10)
    r = cli("logs", "analyze", str(bad))
    assert r.exit_code == 2 and "x.bz2: a bzip2-compressed file" in r.stderr
    assert "Traceback" not in r.stderr
