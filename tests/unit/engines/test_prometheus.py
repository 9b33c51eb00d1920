"""Prometheus text (``engines.prometheus``): format corners, real SGLang and vLLM dumps, metric
definitions and the fixtures they cite."""

from __future__ import annotations

import math
import re

import pytest

import inferlab.engines as engines
from inferlab.engines import (
    get_engine,
    histogram_buckets,
    parse_prometheus,
)
from inferlab.engines.prometheus import MetricDef, PrometheusParseError, select
from support import FIXTURES

FIX = FIXTURES / "engine_logs"
ENGINES = ["command", "llamacpp", "openai", "sglang", "sim", "transformers", "vllm"]


def _read(rel: str) -> str:
    return (FIX / rel).read_text(encoding="utf-8")


# ---------------------------------------------------------------- Prometheus parser


def test_parse_prometheus_format_corners() -> None:
    text = "\n".join(
        [
            "# HELP m_total A counter.",
            "# TYPE m_total counter",
            'm_total{path="/a\\"b\\\\c\\nd",code="200"} 3 1700000000000',
            "up 1",
            'h_bucket{le="+Inf"} +Inf',
            'h_bucket{le="0.5",} NaN',
            "neg -Inf",
            "sci 1.5e+06",
            "   ",
            "# EOF",
        ]
    )
    s = parse_prometheus(text)
    assert [x.name for x in s] == ["m_total", "up", "h_bucket", "h_bucket", "neg", "sci"]
    assert dict(s[0].labels) == {"path": '/a"b\\c\nd', "code": "200"}
    assert s[0].timestamp_ms == 1700000000000 and s[0].value == 3.0
    assert s[1].labels == {} and s[1].timestamp_ms is None
    assert s[2].value == math.inf and math.isnan(s[3].value) and s[4].value == -math.inf
    assert s[5].value == 1.5e6


def test_parse_prometheus_skips_or_raises_on_non_samples() -> None:
    ui = _read("prometheus/vllm-pr24049_spec-decode-counters-dp8-prometheus-ui-table.log")
    assert parse_prometheus(ui) == []  # a Prometheus web-UI table, not exposition text
    with pytest.raises(PrometheusParseError, match="line 1"):
        parse_prometheus(ui, strict=True)
    with pytest.raises(PrometheusParseError):
        parse_prometheus('x{a="1} 2', strict=True)


def test_parse_sglang_full_dump() -> None:
    s = parse_prometheus(
        _read("prometheus/sglang-docs-production_metrics_llama31-8b-full-dump.log")
    )
    by = {x.name: x for x in s}
    assert by["sglang:prompt_tokens_total"].value == 8.128902e06
    assert by["sglang:token_usage"].labels == {"model_name": "meta-llama/Llama-3.1-8B-Instruct"}
    buckets = histogram_buckets(s, "sglang:time_to_first_token_seconds")
    assert buckets[0] == (0.001, 0.0) and buckets[-1] == (math.inf, 11008.0)
    assert [c for _, c in buckets] == sorted(c for _, c in buckets)  # cumulative
    assert by["sglang:time_to_first_token_seconds_count"].value == buckets[-1][1]
    sg = get_engine("sglang")
    ttft = sg.metric("ttft")
    assert ttft is not None
    assert [x.name for x in select(s, ttft)] == [
        "sglang:time_to_first_token_seconds_sum",
        "sglang:time_to_first_token_seconds_count",
    ]
    itl = sg.metric("itl")  # the dump predates inter_token_latency_seconds: old name found
    assert itl is not None and select(s, itl)[0].name.startswith(
        "sglang:time_per_output_token_seconds"
    )


def test_parse_dp_attention_dump_sums_over_ranks() -> None:
    s = parse_prometheus(_read("prometheus/aibrix-1614_sglang-dp-attention-deepseek-r1.log"))
    gen = get_engine("sglang").metric("gen_throughput")
    assert gen is not None
    series = select(s, gen)
    assert {x.labels["dp_rank"] for x in series} >= {"0", "2", "3", "4", "5", "6", "7"}
    assert all(x.value > 0 for x in series)


def test_parse_vllm_dumps() -> None:
    s = parse_prometheus(
        _read("prometheus/production-stack-318_vllm-qwen-coder-process-and-vllm.log")
    )
    vllm = get_engine("vllm")
    kv = vllm.metric("kv_cache_usage")
    assert kv is not None and kv.names == ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    assert [x.name for x in select(s, kv)] == ["vllm:gpu_cache_usage_perc"]  # older version
    assert next(x for x in s if x.name == "process_max_fds").value == 1048576.0
    h = parse_prometheus(_read("prometheus/vllm-issue8819_v0-histogram-buckets-opt125m.log"))
    assert histogram_buckets(h, "vllm:request_params_n") == [
        (1.0, 1.0),
        (2.0, 1.0),
        (5.0, 1.0),
        (10.0, 1.0),
        (20.0, 1.0),
        (math.inf, 1.0),
    ]
    assert histogram_buckets(h, "vllm:request_params_n", {"model_name": "other"}) == []


def test_metric_def_exposition_names() -> None:
    m = MetricDef("d", "counter", ("vllm:spec_decode_num_drafts",), "n", "")
    assert m.sample_names() == ("vllm:spec_decode_num_drafts_total",)
    assert MetricDef("c", "counter", ("llamacpp:prompt_tokens_total",), "n", "").sample_names() == (
        "llamacpp:prompt_tokens_total",
    )
    h = MetricDef("h", "histogram", ("a", "b"), "s", "")
    assert h.all_sample_names() == ("a_bucket", "a_sum", "a_count", "b_bucket", "b_sum", "b_count")


def test_required_metric_names() -> None:
    vllm, sg = get_engine("vllm"), get_engine("sglang")

    def names(spec: engines.EngineSpec, key: str) -> tuple[str, ...]:
        m = spec.metric(key)
        assert m is not None, key
        return m.names

    assert names(vllm, "spec_drafts") == ("vllm:spec_decode_num_drafts",)
    assert names(vllm, "spec_draft_tokens") == ("vllm:spec_decode_num_draft_tokens",)
    assert names(vllm, "spec_accepted_tokens") == ("vllm:spec_decode_num_accepted_tokens",)
    assert names(vllm, "running") == ("vllm:num_requests_running",)
    assert names(vllm, "waiting") == ("vllm:num_requests_waiting",)
    assert names(vllm, "generation_tokens") == ("vllm:generation_tokens",)
    assert names(sg, "spec_accept_length") == ("sglang:spec_accept_length",)
    assert names(sg, "kv_cache_usage") == ("sglang:token_usage",)
    assert names(sg, "gen_throughput") == ("sglang:gen_throughput",)
    assert names(sg, "running") == ("sglang:num_running_reqs",)
    assert names(sg, "waiting") == ("sglang:num_queue_reqs",)
    drafts = vllm.metric("spec_drafts")
    assert drafts is not None
    assert drafts.sample_names() == ("vllm:spec_decode_num_drafts_total",)


def test_metric_names_citing_a_fixture_appear_in_it() -> None:
    """Every metric whose source names a dump under tests/fixtures/engine_logs/prometheus/ has
    one of its exposition names in that dump, as a sample or a HELP/TYPE line (the web-UI table
    is scanned as text)."""
    checked = 0
    for name in ENGINES:
        for m in get_engine(name).metrics:
            for fixture in re.findall(r"prometheus/([\w.-]+\.log)", m.source):
                text = _read("prometheus/" + fixture)
                series = {x.name for x in parse_prometheus(text)}
                series |= set(re.findall(r"^([a-zA-Z_:][\w:]*)\{", text, re.M))
                series |= set(re.findall(r"^# (?:HELP|TYPE) (\S+)", text, re.M))
                wanted = set(m.all_sample_names())
                if m.type == "counter":  # prometheus_client also exports <name>_created
                    wanted |= {n.removesuffix("_total") + "_created" for n in wanted}
                assert series & wanted, (m.key, fixture)
                checked += 1
    assert checked >= 15
