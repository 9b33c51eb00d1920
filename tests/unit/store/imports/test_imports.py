"""Importers of other tools' benchmark results (inferlab.store.imports).

Every fixture under tests/fixtures/imports/ is a real file written by the tool itself; the
checks recompute the tool's own numbers from the records by hand.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferlab.errors import ConfigError
from inferlab.records import ErrorKind
from inferlab.stats.metrics import itl_ms, summarize, tpot_ms
from inferlab.store.imports import FORMATS, ImportedRun, detect, parse_file
from support import FIXTURES
from support.fuzzing import (
    byte_mutation,
    fuzz,
    parses_or_names_file,
    paths_of,
    tree_mutation,
    write,
)

FIX = FIXTURES / "imports"
SGLANG = FIX / "sglang-bench-serving-output-file_llama33-70b-h200_online.jsonl"
VLLM = FIX / "vllm-0.17.1_bench-serve_save-result_llama31-8b_conc12_run1.json"


def _one(path: Path) -> ImportedRun:
    runs = parse_file(path)
    assert len(runs) == 1
    return runs[0]


# ---------------------------------------------------------------- registry and helpers


def test_registry_names_and_tools() -> None:
    assert set(FORMATS) == {"sglang.bench_serving", "vllm bench serve", "guidellm", "aiperf"}
    assert {f.tool for f in FORMATS.values()} == {
        "sglang.bench_serving",
        "vllm bench serve",
        "guidellm",
        "aiperf",
    }


# ---------------------------------------------------------------- sglang.bench_serving


def test_sglang_real_file_aggregates() -> None:
    assert detect(SGLANG) == "sglang.bench_serving"
    runs = parse_file(SGLANG)
    lines = [json.loads(s) for s in SGLANG.read_text().splitlines() if s.strip()]
    assert len(runs) == len(lines) == 7
    for run, raw in zip(runs, lines):
        assert run.tool == "sglang.bench_serving"
        assert run.records == []  # no --output-details
        assert run.rate == raw["request_rate"]
        assert run.label == f"rate={raw['request_rate']:g}/s"
        assert run.concurrency is None
        assert run.duration_s == raw["duration"]
        assert run.summary["ttft_ms_median"] == raw["median_ttft_ms"]
        assert run.summary["e2e_ms_mean"] == raw["mean_e2e_latency_ms"]
        assert run.summary["itl_ms_median"] == raw["median_itl_ms"]  # backend sglang: per token
        assert run.summary["output_tok_s"] == raw["output_throughput"]
        assert run.summary["output_tokens"] == raw["total_output_tokens"]
        assert run.summary["ok"] == raw["completed"]
        assert run.tool_summary == raw
        assert run.workload["dataset_name"] == raw["dataset_name"]
    assert runs[0].label == "rate=1/s"
    assert any("[DONE]" in n for n in runs[0].notes)


def _sglang_detail_line(backend: str = "sglang") -> dict[str, object]:
    """A run with --output-details, shaped as sglang.bench_serving writes it (2 ok, 1 failed)."""
    ttfts = [0.05, 0.06, 0.0]
    if backend == "sglang":
        # per token: request 0 got tokens 1 | 2,3 (one chunk of 2 after 20 ms) | 4 (10 ms)
        itls = [[0.01, 0.01, 0.01], [0.005, 0.005, 0.005, 0.005, 0.02], []]
    else:
        itls = [[0.02, 0.01], [0.02, 0.02, 0.02, 0.02], []]
    out_lens = [4, 6, 0]
    return {
        "backend": backend,
        "dataset_name": "random",
        "request_rate": float("inf"),
        "max_concurrency": 2,
        "random_input_len": 32,
        "random_output_len": 6,
        "random_range_ratio": 0.0,
        "duration": 1.0,
        "completed": 2,
        "total_input_tokens": 64,
        "total_output_tokens": 10,
        "total_output_tokens_retokenized": 10,
        "request_throughput": 2.0,
        "output_throughput": 10.0,
        "mean_e2e_latency_ms": 100.0,
        "mean_ttft_ms": 55.0,
        "std_ttft_ms": 5.0,
        "mean_itl_ms": 9.0,
        "std_itl_ms": 1.0,
        "input_lens": [32, 32, 32],
        "output_lens": out_lens,
        "ttfts": ttfts,
        "itls": itls,
        "generated_texts": ["a b c d", "a b c d e f", ""],
        "errors": ["", "", "Traceback ...\naiohttp.client_exceptions.ServerDisconnectedError"],
    }


def test_sglang_details_per_token_regrouped(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(_sglang_detail_line()) + "\n")
    (run,) = parse_file(p)
    assert run.label == "C=2" and run.concurrency == 2 and run.rate is None
    r0, r1, r2 = run.records
    # three identical 10 ms entries after 1 token: one chunk of 3 tokens after 30 ms
    assert r0.event_ns == [50_000_000, 80_000_000]
    assert r0.event_tokens == [1, 3]
    assert itl_ms(r0) == pytest.approx([10.0, 10.0, 10.0])  # the tool's per-token ITL back
    # 6 tokens, 5 entries: first event 1 token, then 4 tokens after 20 ms, 1 after 20 ms
    assert r1.event_tokens == [1, 4, 1]
    assert r1.event_ns == [60_000_000, 80_000_000, 100_000_000]
    assert sorted(itl_ms(r0) + itl_ms(r1)) == pytest.approx(
        sorted(x for row in _itls() for x in row)
    )
    assert r2.error_kind is ErrorKind.TRUNCATED and "ServerDisconnected" in (r2.error_message or "")
    assert all(r.send_ns == 0 for r in run.records)
    s = summarize(run.records)
    assert s.output_tokens == 10 and s.ok == 2 and s.errors == {"truncated": 1}
    assert run.summary["failed"] == 1 and run.summary["requests"] == 3
    # population std over n → sample std; n = completed for TTFT, #itl entries for ITL
    assert run.summary["ttft_ms_std"] == pytest.approx(5.0 * math.sqrt(2 / 1))
    assert run.summary["itl_ms_std"] == pytest.approx(1.0 * math.sqrt(8 / 7))
    assert run.workload["output_tokens"] == {"mean": 5.0, "min": 4.0, "max": 6.0}


def _itls() -> list[list[float]]:
    line = _sglang_detail_line()
    itls = line["itls"]
    assert isinstance(itls, list)
    return [[x * 1000 for x in row] for row in itls]


def test_sglang_details_openai_backend_is_icl(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(_sglang_detail_line("sglang-oai")) + "\n")
    (run,) = parse_file(p)
    assert "icl_ms_mean" in run.summary and "itl_ms_mean" not in run.summary
    r0, r1, _ = run.records
    assert r0.event_tokens == [1, 1, 2]  # 4 tokens over 3 chunks: first 1, ≥1 each
    assert r1.event_tokens == [1, 1, 1, 2, 1]
    assert sum(r1.event_tokens) == 6
    assert any("ICL" in n for n in run.notes)


def test_sglang_details_inconsistent_total_raises(tmp_path: Path) -> None:
    line = _sglang_detail_line()
    line["total_output_tokens"] = 11
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(line) + "\n")
    with pytest.raises(ConfigError, match=r"s\.jsonl:1: sum\(output_lens\) = 10"):
        parse_file(p)


# ---------------------------------------------------------------- vllm bench serve


def test_vllm_real_file() -> None:
    raw = json.loads(VLLM.read_text())
    assert detect(VLLM) == "vllm bench serve"
    run = _one(VLLM)
    assert run.tool == "vllm bench serve"
    assert run.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert run.label == "C=12" and run.concurrency == 12 and run.rate is None
    assert run.duration_s == raw["duration"]
    assert len(run.records) == raw["completed"] == 20
    assert all(r.ok for r in run.records)
    # output tokens sum matches total_output_tokens; tokens per event sum to each length
    assert sum(r.output_tokens for r in run.records) == raw["total_output_tokens"]
    for r, n in zip(run.records, raw["output_lens"]):
        assert sum(r.event_tokens) == n and min(r.event_tokens) >= 1
        assert len(r.event_ns) == len(r.event_tokens)
    # send times are the vLLM client's perf_counter
    assert [r.send_ns for r in run.records] == [round(t * 1e9) for t in raw["start_times"]]
    # the aggregates, mapped: ITL per chunk → ICL
    assert run.summary["ttft_ms_mean"] == raw["mean_ttft_ms"]
    assert run.summary["ttft_ms_p99"] == raw["p99_ttft_ms"]
    assert run.summary["tpot_ms_median"] == raw["median_tpot_ms"]
    assert run.summary["icl_ms_p99"] == raw["p99_itl_ms"]
    assert run.summary["e2e_ms_mean"] == raw["mean_e2el_ms"]
    assert run.summary["output_tok_s"] == raw["output_throughput"]
    assert run.summary["request_s"] == raw["request_throughput"]
    assert "itl_ms_mean" not in run.summary
    assert run.summary["ttft_ms_std"] == pytest.approx(raw["std_ttft_ms"] * math.sqrt(20 / 19))
    assert run.tool_summary["mean_ttft_ms"] == raw["mean_ttft_ms"]
    assert "itls" not in run.tool_summary


def test_vllm_records_rebuild_tool_numbers() -> None:
    raw = json.loads(VLLM.read_text())
    run = _one(VLLM)
    # 64 tokens, 64 gaps: 65 chunks, the leading one (chat role chunk) carries no token
    assert all(len(x) == 64 for x in raw["itls"]) and set(raw["output_lens"]) == {64}
    shift_ms = [itl[0] * 1000 for itl in raw["itls"]]
    ttft = [r.ttft_ns / 1e6 for r in run.records if r.ttft_ns is not None]
    for mine, theirs, sh in zip(ttft, raw["ttfts"], shift_ms):
        assert mine == pytest.approx(theirs * 1000 + sh, abs=1e-5)
    # mean TTFT: the tool's mean_ttft_ms plus the dropped role-chunk gap, within rounding
    assert statistics.mean(ttft) - statistics.mean(shift_ms) == pytest.approx(
        raw["mean_ttft_ms"], abs=1e-5
    )
    assert statistics.mean(ttft) == pytest.approx(raw["mean_ttft_ms"], abs=0.01)
    # 64 one-token events: ICL = ITL = the tool's chunk gaps after the first
    gaps = sorted(g * 1000 for itl in raw["itls"] for g in itl[1:])
    assert sorted(x for r in run.records for x in itl_ms(r)) == pytest.approx(gaps, abs=1e-5)
    # TPOT by the definition: (E2E − TTFT)/(n − 1), as vLLM less the role-chunk shift
    for r, itl in zip(run.records, raw["itls"]):
        assert tpot_ms(r) == pytest.approx(sum(itl[1:]) * 1000 / 63, abs=1e-5)
    s = summarize(run.records)
    assert s.output_tokens == raw["total_output_tokens"]
    assert s.tpot_ms.mean == pytest.approx(raw["mean_tpot_ms"], abs=0.01)
    assert s.e2e_ms.mean == pytest.approx(raw["mean_e2el_ms"], abs=0.02)
    assert any("role-only chunk" in n for n in run.notes)


def _vllm_with_failure(tmp_path: Path) -> Path:
    raw = json.loads(VLLM.read_text())
    raw["completed"] -= 1
    raw["failed"] = 1
    raw["total_output_tokens"] -= raw["output_lens"][3]
    raw["output_lens"][3] = 0
    raw["ttfts"][3] = 0.0
    raw["itls"][3] = []
    raw["errors"][3] = "Internal Server Error"
    p = tmp_path / "v.json"
    p.write_text(json.dumps(raw))
    return p


def test_vllm_failed_request_is_a_record(tmp_path: Path) -> None:
    run = _one(_vllm_with_failure(tmp_path))
    bad = run.records[3]
    assert bad.error_kind is ErrorKind.HTTP and bad.error_message == "Internal Server Error"
    assert bad.event_ns == []
    s = summarize(run.records)
    assert s.errors == {"http": 1} and s.ok == 19
    assert run.summary["failed"] == 1 and run.summary["requests"] == 20


def test_vllm_without_details(tmp_path: Path) -> None:
    raw = json.loads(VLLM.read_text())
    for k in (
        "input_lens",
        "output_lens",
        "start_times",
        "ttfts",
        "itls",
        "generated_texts",
        "errors",
    ):
        del raw[k]
    p = tmp_path / "plain.json"
    p.write_text(json.dumps(raw, indent=2))
    run = _one(p)
    assert run.records == []
    assert "tpot_ms_std" not in run.summary  # n unknown without details
    assert run.summary["ttft_ms_std"] == pytest.approx(raw["std_ttft_ms"] * math.sqrt(20 / 19))


def test_vllm_append_result_jsonl(tmp_path: Path) -> None:
    raw = json.loads(VLLM.read_text())
    raw2 = dict(raw, max_concurrency=4, request_rate=2.5)
    p = tmp_path / "appended.json"
    p.write_text(json.dumps(raw) + "\n" + json.dumps(raw2))
    runs = parse_file(p)
    assert [r.label for r in runs] == ["C=12", "C=4,rate=2.5/s"]


# ---------------------------------------------------------------- damaged input


@pytest.mark.parametrize("src", [SGLANG, VLLM], ids=["sglang", "vllm"])
def test_truncated_file_names_file(tmp_path: Path, src: Path) -> None:
    text = src.read_text()
    p = tmp_path / ("cut" + src.suffix)
    p.write_text(text[: len(text) * 2 // 3])
    with pytest.raises(ConfigError, match=r"cut\.json"):
        parse_file(p)


def test_truncated_jsonl_names_line(tmp_path: Path) -> None:
    lines = SGLANG.read_text().splitlines()
    p = tmp_path / "cut.jsonl"
    p.write_text("\n".join([*lines[:3], lines[3][:50]]))
    with pytest.raises(ConfigError, match=r"cut\.jsonl:4: not a valid JSON line"):
        parse_file(p)


def test_missing_field_names_file_and_line(tmp_path: Path) -> None:
    objs = [json.loads(s) for s in SGLANG.read_text().splitlines()]
    del objs[2]["duration"]
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(json.dumps(o) for o in objs))
    with pytest.raises(ConfigError, match=r"m\.jsonl:3: missing required field 'duration'"):
        parse_file(p)


def test_wrong_type_names_field(tmp_path: Path) -> None:
    raw = json.loads(VLLM.read_text())
    raw["ttfts"][5] = "fast"
    p = tmp_path / "w.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=r"w\.json:1: ttfts\[5\] must be a number"):
        parse_file(p)
    raw = json.loads(VLLM.read_text())
    raw["itls"] = raw["itls"][:-1]
    p.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=r"'itls' has 19 entries, expected 20"):
        parse_file(p)
    raw = json.loads(VLLM.read_text())
    raw["completed"] = "20"
    p.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=r"'completed' must be an integer"):
        parse_file(p)


def test_unknown_content(tmp_path: Path) -> None:
    p = tmp_path / "results.json"  # a name that says nothing: content decides
    p.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ConfigError, match=r"results\.json: not a benchmark result"):
        detect(p)
    p.write_text("[1, 2, 3]")
    with pytest.raises(ConfigError, match=r"results\.json"):
        parse_file(p)
    p.write_text("")
    with pytest.raises(ConfigError, match=r"results\.json: empty file"):
        parse_file(p)
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match=r"results\.json: not UTF-8"):
        parse_file(p)
    with pytest.raises(ConfigError, match=r"nope\.json: no such file"):
        parse_file(tmp_path / "nope.json")


def test_detection_ignores_file_name(tmp_path: Path) -> None:
    p = tmp_path / "sglang_results.jsonl"
    p.write_text(VLLM.read_text())
    assert detect(p) == "vllm bench serve"
    q = tmp_path / "vllm.json"
    q.write_text(SGLANG.read_text())
    assert detect(q) == "sglang.bench_serving"


# ---------------------------------------------------------------- GuideLLM (real 0.8.1 reports)

GL_C4 = FIX / "guidellm-0.8.1_concurrent4_sim.json"
GL_SWEEP = FIX / "guidellm-0.8.1_constant-sweep_http500_sim.json"


def _gl_requests(path: Path, i: int = 0) -> list[dict[str, object]]:
    raw = json.loads(path.read_text())
    reqs = raw["benchmarks"][i]["requests"]["successful"]
    assert isinstance(reqs, list)
    return reqs


def test_guidellm_real_report() -> None:
    raw = json.loads(GL_C4.read_text())
    b = raw["benchmarks"][0]
    assert detect(GL_C4) == "guidellm"
    run = _one(GL_C4)
    assert run.tool == "guidellm" and run.tool_version == "0.8.1"
    assert run.model == "inferlab-sim"
    assert run.label == "C=4" and run.concurrency == 4 and run.rate is None
    assert run.duration_s == b["duration"]
    assert run.started_at is not None and run.started_at.startswith("20")
    assert len(run.records) == 20 and all(r.ok for r in run.records)
    m = b["metrics"]
    # TTFT: inferlab's definition; recomputed mean equals GuideLLM's
    s = summarize(run.records)
    assert s.ttft_ms.mean == pytest.approx(
        m["time_to_first_token_ms"]["successful"]["mean"], abs=1e-3
    )
    assert run.summary["ttft_ms_mean"] == m["time_to_first_token_ms"]["successful"]["mean"]
    # output tokens
    assert s.output_tokens == m["output_token_count"]["successful"]["total_sum"] == 640
    assert run.summary["output_tok_s"] == m["output_tokens_per_second"]["successful"]["mean"]
    assert run.summary["output_tok_s"] == pytest.approx(640 / b["duration"], rel=1e-6)
    # std: population → sample
    ttfts = [r["time_to_first_token_ms"] for r in _gl_requests(GL_C4)]
    assert run.summary["ttft_ms_std"] == pytest.approx(statistics.stdev(ttfts))
    # percentiles are not inferlab's estimator: not mapped
    assert "ttft_ms_p99" not in run.summary and "ttft_ms_median" not in run.summary
    assert run.tool_summary["metrics"] == m


def test_guidellm_tpot_includes_ttft_converted() -> None:
    run = _one(GL_C4)
    reqs = _gl_requests(GL_C4)
    for rec, r in zip(run.records, reqs):
        n, ttft, tpot_gl = (
            r["output_tokens"],
            r["time_to_first_token_ms"],
            r["time_per_output_token_ms"],
        )
        assert isinstance(n, int) and isinstance(ttft, float) and isinstance(tpot_gl, float)
        # GuideLLM's TPOT = (last − start)/n includes TTFT ...
        converted = (tpot_gl * n - ttft) / (n - 1)
        # ... converted = inferlab TPOT from the record = GuideLLM's per-request ITL
        assert tpot_ms(rec) == pytest.approx(converted, abs=1e-3)
        assert converted == pytest.approx(r["inter_token_latency_ms"], abs=1e-6)
        assert tpot_gl > converted
    tp = [(r["time_per_output_token_ms"] * 32 - r["time_to_first_token_ms"]) / 31 for r in reqs]  # type: ignore[operator]
    assert run.summary["tpot_ms_mean"] == pytest.approx(statistics.mean(tp))
    assert run.summary["tpot_ms_median"] == pytest.approx(statistics.median(tp))
    # GuideLLM's ITL mean (weighted by n − 1) is inferlab's mean ITL over all per-token gaps
    s = summarize(run.records)
    assert run.summary["itl_ms_mean"] == pytest.approx(s.itl_ms.mean, abs=1e-4)
    assert any("includes TTFT" in n for n in run.notes)


def test_guidellm_sweep_with_http_errors() -> None:
    raw = json.loads(GL_SWEEP.read_text())
    runs = parse_file(GL_SWEEP)
    assert [r.label for r in runs] == ["rate=10/s", "rate=20/s"]
    assert [r.rate for r in runs] == [10.0, 20.0]
    for run, b in zip(runs, raw["benchmarks"]):
        errored = b["requests"]["errored"]
        bad = [r for r in run.records if not r.ok]
        assert len(bad) == len(errored) == run.summary["failed"] == 2
        assert all(r.error_kind is ErrorKind.HTTP for r in bad)
        assert all("500 Internal Server Error" in (r.error_message or "") for r in bad)
        s = summarize(run.records)
        assert s.errors == {"http": 2} and s.ok == b["metrics"]["request_totals"]["successful"]
        assert s.output_tokens == b["metrics"]["output_token_count"]["successful"]["total_sum"]


# ---------------------------------------------------------------- AIPerf (real 0.13.0 exports)

AP_CHAT = FIX / "aiperf-0.13.0_chat_c4_sim"
AP_ERR = FIX / "aiperf-0.13.0_completions_c4_http500_sim"


def _ap(dirname: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    agg = json.loads((dirname / "profile_export_aiperf.json").read_text())
    recs = [json.loads(s) for s in (dirname / "profile_export.jsonl").read_text().splitlines()]
    return agg, recs


def _stat(agg: dict[str, object], tag: str, stat: str) -> float:
    d = agg[tag]
    assert isinstance(d, dict)
    return float(d[stat])


def test_aiperf_real_export() -> None:
    agg, raw = _ap(AP_CHAT)
    path = AP_CHAT / "profile_export_aiperf.json"
    assert detect(path) == "aiperf"
    assert detect(AP_CHAT / "profile_export.jsonl") == "aiperf"
    run = _one(path)
    assert run.tool == "aiperf" and run.tool_version == "0.13.0"
    assert run.model == "inferlab-sim" and run.label == "C=4" and run.concurrency == 4
    assert run.started_at == agg["start_time"]
    assert run.duration_s == _stat(agg, "benchmark_duration", "avg")
    assert len(run.records) == 20 and all(r.ok for r in run.records)
    s = summarize(run.records)
    # hand checks: mean TTFT and E2E recomputed from the records
    assert s.ttft_ms.mean == pytest.approx(_stat(agg, "time_to_first_token", "avg"), abs=1e-5)
    assert s.e2e_ms.mean == pytest.approx(_stat(agg, "request_latency", "avg"), abs=1e-5)
    assert s.ttft_ms.p99 == pytest.approx(_stat(agg, "time_to_first_token", "p99"), abs=1e-5)
    assert s.output_tokens == _stat(agg, "total_output_tokens", "avg") == 640
    # same TTFT, mapped
    assert run.summary["ttft_ms_mean"] == _stat(agg, "time_to_first_token", "avg")
    assert run.summary["ttft_ms_std"] == pytest.approx(s.ttft_ms.std)  # population → sample
    assert run.summary["e2e_ms_p90"] == _stat(agg, "request_latency", "p90")
    assert run.summary["output_tok_s"] == _stat(agg, "output_token_throughput", "avg")
    # ICL = AIPerf inter_chunk_latency
    assert s.icl_ms.mean == pytest.approx(_stat(agg, "inter_chunk_latency", "avg"), abs=1e-5)
    assert run.summary["icl_ms_p50"] == _stat(agg, "inter_chunk_latency", "p50")


def test_aiperf_itl_is_tpot() -> None:
    agg, raw = _ap(AP_CHAT)
    run = _one(AP_CHAT / "profile_export_aiperf.json")
    for rec, r in zip(run.records, raw):
        m = r["metrics"]
        assert isinstance(m, dict)
        itl = m["inter_token_latency"]["value"]
        lat, ttft, osl = (
            m[k]["value"]
            for k in ("request_latency", "time_to_first_token", "output_sequence_length")
        )
        assert itl == pytest.approx((lat - ttft) / (osl - 1))  # the formula
        assert tpot_ms(rec) == pytest.approx(itl, abs=1e-5)  # = inferlab TPOT
    assert run.summary["tpot_ms_mean"] == _stat(agg, "inter_token_latency", "avg")
    assert "itl_ms_mean" not in run.summary
    s = summarize(run.records)
    assert s.tpot_ms.mean == pytest.approx(run.summary["tpot_ms_mean"], abs=1e-5)
    assert s.user_tok_s.mean == pytest.approx(run.summary["user_tok_s_mean"], abs=1e-5)
    assert any("inferlab's TPOT" in n for n in run.notes)


def test_aiperf_records_file_with_errors_and_multi_token_chunks() -> None:
    agg, raw = _ap(AP_ERR)
    run = _one(AP_ERR / "profile_export.jsonl")  # the records file finds its aggregate
    assert run.summary["failed"] == 4 and run.summary["ok"] == 16
    bad = [r for r in run.records if not r.ok]
    assert len(bad) == 4
    assert all(r.error_kind is ErrorKind.HTTP and r.status == 500 for r in bad)
    assert all("simulated internal error" in (r.error_message or "") for r in bad)
    good = [r for r in run.records if r.ok]
    # 3 tokens per chunk after the first: 12 events for 32 tokens
    for r in good:
        assert sum(r.event_tokens) == r.output_tokens == 32 and r.event_tokens[0] == 1
        assert len(r.event_ns) == 12
    s = summarize(run.records)
    assert s.errors == {"http": 4}
    assert s.ttft_ms.mean == pytest.approx(_stat(agg, "time_to_first_token", "avg"), abs=1e-5)
    assert s.tpot_ms.mean == pytest.approx(_stat(agg, "inter_token_latency", "avg"), abs=1e-5)
    # ITL spreads each 3-token chunk's gap over its tokens: mean ITL = decode time / (n − 1)
    assert s.itl_ms.mean == pytest.approx(s.tpot_ms.mean, rel=1e-3)
    assert s.icl_ms.mean == pytest.approx(_stat(agg, "inter_chunk_latency", "avg"), abs=1e-5)


def test_aiperf_damaged_record_names_line(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "profile_export_aiperf.json").write_text(
        (AP_CHAT / "profile_export_aiperf.json").read_text()
    )
    lines = (AP_CHAT / "profile_export.jsonl").read_text().splitlines()
    r = json.loads(lines[6])
    r["metrics"]["time_to_first_token"]["value"] = "soon"
    lines[6] = json.dumps(r)
    (d / "profile_export.jsonl").write_text("\n".join(lines))
    with pytest.raises(ConfigError, match=r"profile_export\.jsonl:7.*time_to_first_token"):
        parse_file(d / "profile_export_aiperf.json")
    (d / "profile_export.jsonl").write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])
    with pytest.raises(ConfigError, match=r"profile_export\.jsonl:6: not a valid JSON line"):
        parse_file(d / "profile_export_aiperf.json")


@pytest.mark.parametrize(
    "src", [GL_C4, AP_CHAT / "profile_export_aiperf.json"], ids=["guidellm", "aiperf"]
)
def test_truncated_reports(tmp_path: Path, src: Path) -> None:
    text = src.read_text()
    p = tmp_path / "half.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(ConfigError, match=r"half\.json: not valid JSON"):
        parse_file(p)


def test_guidellm_missing_and_wrong_fields(tmp_path: Path) -> None:
    raw = json.loads(GL_C4.read_text())
    del raw["benchmarks"][0]["metrics"]
    p = tmp_path / "g.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(
        ConfigError, match=r"g\.json.*benchmarks\[0\].*missing required field 'metrics'"
    ):
        parse_file(p)
    raw = json.loads(GL_C4.read_text())
    raw["benchmarks"][0]["requests"]["successful"][3]["output_tokens"] = "32"
    p.write_text(json.dumps(raw))
    with pytest.raises(
        ConfigError, match=r"requests\.successful\[3\].*'output_tokens' must be an integer"
    ):
        parse_file(p)


def test_sglang_newer_fields_and_trace_rate(tmp_path: Path) -> None:
    line = _sglang_detail_line()
    line.update(
        request_rate="trace",
        max_concurrency=None,
        tag="x",
        server_info={"version": "0.5"},
        p90_ttft_ms=60.0,
        max_concurrent_requests=3,
    )
    p = tmp_path / "new.jsonl"
    p.write_text(json.dumps(line) + "\n" + json.dumps(_sglang_detail_line()) + "\n")
    a, b = parse_file(p)
    assert a.label == "trace" and a.rate is None and a.summary["ttft_ms_p90"] == 60.0
    assert a.tool_summary["server_info"] == {"version": "0.5"}
    assert b.label == "C=2"


# --- fuzzing: the importers on mutated real files (settings: tests/support/fuzzing.py)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


_COUNT = itertools.count()


# ----------------------------------------------------------------------------- importers

IMPORTS = sorted(p for p in FIXTURES.glob("imports/**/*") if p.is_file())


def _import_seed(path: Path) -> tuple[bool, Any]:
    text = path.read_text()
    try:
        return False, json.loads(text)
    except ValueError:
        return True, [json.loads(x) for x in text.splitlines() if x.strip()]


IMPORT_SEEDS = [_import_seed(p) for p in IMPORTS]
IMPORT_PATHS = [list(paths_of(doc)) for _, doc in IMPORT_SEEDS]


@fuzz(200)
@given(data=st.data())
def test_importers_mutated(tmp: Path, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(IMPORTS) - 1))
    jsonl, doc = IMPORT_SEEDS[i]
    if data.draw(st.booleans()):
        raw = data.draw(byte_mutation(IMPORTS[i].read_bytes()))
    else:
        doc = data.draw(tree_mutation(doc, IMPORT_PATHS[i]))
        lines = doc if jsonl and isinstance(doc, list) else [doc]
        raw = "\n".join(json.dumps(x) for x in lines).encode()
    d = tmp / f"imp{next(_COUNT)}"
    if IMPORTS[i].parent == FIXTURES / "imports":
        d.mkdir()
    else:  # an AIPerf export: read with its sibling file
        shutil.copytree(IMPORTS[i].parent, d)
    siblings = tuple(p for p in d.iterdir() if p.name != IMPORTS[i].name)
    parses_or_names_file(parse_file, write(d, IMPORTS[i].name, raw), siblings)
    shutil.rmtree(d)
