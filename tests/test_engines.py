"""Engine knowledge (inferlab.engines): launch argv, flags, request fields, Prometheus metric
names and parser, log signatures.

Log signatures and metric names are checked on the real logs and ``/metrics`` dumps under
tests/fixtures/engine_logs/ (see SOURCES.md there). Signatures that have no real log in that set
are checked on single lines written from the engine's message format, marked "constructed".
"""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

import inferlab.engines as engines
from inferlab.engines import (
    Change,
    classify_log,
    clean_line,
    get_engine,
    histogram_buckets,
    parse_prometheus,
    primary_failure,
    registered,
)
from inferlab.engines.flags import FlagSyntax, apply, diff, is_flag, parse
from inferlab.engines.prometheus import MetricDef, PrometheusParseError, select
from inferlab.errors import ConfigError
from support import FIXTURES

FIX = FIXTURES / "engine_logs"
VLLM_CPU = FIXTURES / "vllm_cpu"
ENGINES = ["command", "llamacpp", "openai", "sglang", "sim", "transformers", "vllm"]


def _read(rel: str) -> str:
    return (FIX / rel).read_text(encoding="utf-8")


def _kinds(rel: str, engine: str) -> dict[str, int]:
    return dict(Counter(m.kind for m in classify_log(_read(rel), engine)))


# ---------------------------------------------------------------- registry


def test_public_api_is_pinned() -> None:
    assert sorted(engines.__all__) == sorted(
        [
            "Change",
            "EngineSpec",
            "FlagSyntax",
            "Launcher",
            "LogMatch",
            "LogSignature",
            "MetricDef",
            "NativeApi",
            "ParsedArgs",
            "Sample",
            "classify_log",
            "clean_line",
            "get_engine",
            "histogram_buckets",
            "parse_prometheus",
            "primary_failure",
            "register",
            "registered",
        ]
    )


def test_registry_lists_every_engine_and_refuses_unknown_kinds() -> None:
    assert registered() == ENGINES
    with pytest.raises(ConfigError, match=r"unknown kind 'tgi'.*llamacpp, openai, sglang, sim"):
        get_engine("tgi")
    with pytest.raises(ConfigError, match="unknown kind"):
        classify_log("x", "tgi")


@pytest.mark.parametrize("name", ENGINES)
def test_every_spec_is_consistent(name: str) -> None:
    spec = get_engine(name)
    assert spec.name == name
    for path in (spec.health_path, spec.models_path, spec.tokenize_path, spec.version_path):
        assert path is None or path.startswith("/")
    assert spec.metrics_path in (None, "/metrics")
    keys = [m.key for m in spec.metrics]
    assert len(keys) == len(set(keys))
    for m in spec.metrics:
        assert m.names and m.unit and m.source
        prefix = "sglang" if name == "sim" else name  # the sim speaks SGLang's metrics
        assert all(n.startswith(prefix + ":") or name == "llamacpp" for n in m.names)
    for s in spec.log_signatures:
        assert s.source, s.kind
        assert s.remedy or s.ready or s.kind in {"listening_loading"}, s.kind
        assert not (s.ready and s.fatal)
    ready = [s for s in spec.log_signatures if s.ready]
    # an endpoint already running, and a command's server, are ready when health answers
    assert (len(ready) == 1) == (name not in ("openai", "command"))


# ---------------------------------------------------------------- request fields and paths


def test_fixed_length_fields_openai_api() -> None:
    assert get_engine("vllm").fixed_length_fields(64) == {"ignore_eos": True, "min_tokens": 64}
    assert get_engine("sglang").fixed_length_fields(8) == {"ignore_eos": True, "min_tokens": 8}
    assert get_engine("sim").fixed_length_fields(8) == {"ignore_eos": True, "min_tokens": 8}
    assert get_engine("llamacpp").fixed_length_fields(8) == {"ignore_eos": True}
    assert get_engine("openai").fixed_length_fields(8) == {}


def test_fixed_length_fields_native_api() -> None:
    sg = get_engine("sglang")
    assert sg.native_api is not None and sg.native_api.path == "/generate"
    assert sg.native_fixed_length_fields(32) == {
        "sampling_params": {"max_new_tokens": 32, "min_new_tokens": 32, "ignore_eos": True}
    }
    lc = get_engine("llamacpp")
    assert lc.native_api is not None and lc.native_api.path == "/completion"
    assert lc.native_fixed_length_fields(5) == {"n_predict": 5, "ignore_eos": True}
    assert get_engine("vllm").native_fixed_length_fields(5) == {}


def test_paths() -> None:
    vllm, sg, lc = get_engine("vllm"), get_engine("sglang"), get_engine("llamacpp")
    assert (vllm.health_path, vllm.tokenize_path, vllm.version_path) == (
        "/health",
        "/tokenize",
        "/version",
    )
    assert vllm.metrics_path == "/metrics" and vllm.metrics_enable_flag is None
    assert sg.version_path == "/get_server_info"
    assert sg.metrics_enable_flag == "--enable-metrics"
    assert lc.metrics_enable_flag == "--metrics" and lc.version_path is None
    assert (lc.tokenize_field, vllm.tokenize_field) == ("content", "prompt")
    assert get_engine("openai").metrics_path is None
    assert get_engine("sim").metrics_path == "/metrics"  # SGLang names, SIMULATED


# ---------------------------------------------------------------- launch argv


def test_launch_argv_per_engine() -> None:
    py = "/opt/venv/bin/python"
    assert get_engine("sglang").launch_argv(
        "/models/m", host="0.0.0.0", port=30000, python=py, args=["--tp", "4"]
    ) == [
        py,
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/models/m",
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
        "--tp",
        "4",
    ]
    vllm = get_engine("vllm")
    assert vllm.launch_argv("org/m", host="127.0.0.1", port=8000, python=py) == [
        "vllm",
        "serve",
        "org/m",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
    ]
    assert vllm.launch_argv(
        "org/m", host="h", port=1, python=py, launcher="module", args=["--enforce-eager"]
    ) == [
        py,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "org/m",
        "--host",
        "h",
        "--port",
        "1",
        "--enforce-eager",
    ]
    assert get_engine("llamacpp").launch_argv("/m.gguf", host="h", port=2, python=py) == [
        "llama-server",
        "-m",
        "/m.gguf",
        "--host",
        "h",
        "--port",
        "2",
    ]
    sim = get_engine("sim")
    assert sim.launch_argv(None, host="h", port=0, python=py, args=["--itl-ms", "5"]) == [
        py,
        "-m",
        "inferlab.cli.main",
        "sim",
        "serve",
        "--host",
        "h",
        "--port",
        "0",
        "--itl-ms",
        "5",
    ]
    assert sim.launch_argv("x", host="h", port=0, python=py)[5:7] == ["--model", "x"]


def test_launch_refusals() -> None:
    with pytest.raises(ConfigError, match="already running"):
        get_engine("openai").launch_argv("m", host="h", port=1, python="py")
    with pytest.raises(ConfigError, match="unknown launcher 'x'.*cli, module"):
        get_engine("vllm").launch_argv("m", host="h", port=1, python="py", launcher="x")
    with pytest.raises(ConfigError, match="model is required"):
        get_engine("sglang").launch_argv(None, host="h", port=1, python="py")
    # flags the launcher sets itself, in any spelling
    for engine, args in [
        ("sglang", ["--port", "9"]),
        ("sglang", ["--model", "other"]),
        ("vllm", ["--host=0.0.0.0"]),
        ("vllm", ["--model", "other"]),
        ("llamacpp", ["--model", "other.gguf"]),
    ]:
        with pytest.raises(ConfigError, match="set by inferlab"):
            get_engine(engine).launch_argv("m", host="h", port=1, python="py", args=args)


# ---------------------------------------------------------------- flags


def test_is_flag() -> None:
    assert is_flag("--tp") and is_flag("-tp") and is_flag("-m")
    assert not is_flag("-1") and not is_flag("-0.5") and not is_flag("0.7") and not is_flag("-")


def test_parse_forms_and_aliases() -> None:
    vllm = get_engine("vllm")
    p = vllm.parse_args(
        [
            *("-tp", "2", "--max_model_len=4096", "--enforce-eager", "--seed", "-1"),
            *("--max-model-len", "8192", "--cuda-graph-sizes", "1", "2", "4"),
            '--override-generation-config={"a": 1}',
        ]
    )
    assert dict(p.flags) == {
        "--tensor-parallel-size": ("2",),
        "--max-model-len": ("8192",),  # given twice: first position, last value (argparse)
        "--enforce-eager": (),
        "--seed": ("-1",),
        "--cuda-graph-sizes": ("1", "2", "4"),
        "--override-generation-config": ('{"a": 1}',),
    }
    assert list(p.flags)[1] == "--max-model-len"
    sg = get_engine("sglang")
    for spelling in ("--tp", "--tp-size", "--tensor-parallel-size"):
        assert sg.parse_args([spelling, "4"]).get("--tp-size") == ("4",)
    # SGLang's argparse does not fold underscores: neither do we
    assert "--mem_fraction_static" in sg.parse_args(["--mem_fraction_static", "0.6"])
    lc = get_engine("llamacpp")
    assert dict(lc.parse_args(["-c", "4096", "-ngl", "99", "-fa", "on"]).flags) == {
        "--ctx-size": ("4096",),
        "--n-gpu-layers": ("99",),
        "--flash-attn": ("on",),
    }
    # repeatable flags accumulate
    assert lc.parse_args(["--lora", "a", "--lora", "b"]).get("--lora") == ("a", "b")
    assert lc.apply(["--lora", "a", "--lora", "b"]) == ["--lora", "a", "--lora", "b"]
    # tokens before the first flag are kept as positionals
    assert parse(["serve", "--x", "1"]).positionals == ("serve",)


def test_apply_set_and_unset_the_design_example() -> None:
    sg = get_engine("sglang")
    base = ["--tp", "4", "--mem-fraction-static", "0.70", "--enable-torch-compile"]
    mtp = [*base, "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "1"]
    out = sg.apply(
        mtp,
        set={"--mem-fraction-static": 0.60, "--cuda-graph-max-bs": 16},
        unset=["--enable-torch-compile"],
    )
    assert out == [
        "--tp-size",
        "4",
        "--mem-fraction-static",
        "0.6",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-steps",
        "1",
        "--cuda-graph-max-bs",
        "16",
    ]
    assert [str(c) for c in sg.diff(base, out)] == [
        "~ --mem-fraction-static: 0.70 → 0.6",
        "- --enable-torch-compile",
        "+ --speculative-algorithm EAGLE",
        "+ --speculative-num-steps 1",
        "+ --cuda-graph-max-bs 16",
    ]


def test_apply_value_kinds_and_errors() -> None:
    syn = FlagSyntax()
    assert apply(["--a", "1"], syn, set={"--b": True}) == ["--a", "1", "--b"]
    assert apply(["--a", "1", "--b"], syn, set={"--b": False}) == ["--a", "1"]
    assert apply([], syn, set={"--cuda-graph-bs": [1, 2, 4]}) == ["--cuda-graph-bs", "1", "2", "4"]
    assert apply([], syn, set={"--x": "--y"}) == ["--x=--y"]  # round-trips through parse
    assert parse(["--x=--y"]).get("--x") == ("--y",)
    with pytest.raises(ConfigError, match=r"unset --nope: not in the args \(flags there: --a\)"):
        apply(["--a", "1"], syn, unset=["--nope"])
    assert apply(["--a", "1"], syn, unset=["--nope"], missing_ok=True) == ["--a", "1"]
    with pytest.raises(ConfigError, match="is not a flag"):
        apply([], syn, set={"mem": 1})
    # unset sees aliases
    assert get_engine("vllm").apply(
        ["-tp", "2", "-q", "fp8"], unset=["--tensor_parallel_size"]
    ) == [
        "--quantization",
        "fp8",
    ]


def test_diff_is_alias_and_number_aware_and_ordered() -> None:
    vllm = get_engine("vllm")
    a = ["-tp", "2", "--gpu-memory-utilization", "0.90", "--enforce-eager"]
    b = ["--max-num-seqs", "64", "--tensor-parallel-size", "2", "--gpu_memory_utilization", "0.9"]
    assert vllm.diff(a, b) == [
        Change("--enforce-eager", "removed", (), None),
        Change("--max-num-seqs", "added", None, ("64",)),
    ]
    assert vllm.diff(a, a) == []
    assert diff(["--x", "1"], ["--x", "2"]) == [Change("--x", "changed", ("1",), ("2",))]
    assert str(Change("--e", "added", None, ())) == "+ --e (on)"


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


# ---------------------------------------------------------------- log cleaning


def test_clean_line_strips_transport_prefixes_and_ansi() -> None:
    raw = (FIX / "startup/vllm-0.10.1.1_gpt-oss-120b-ray-tp4_full-startup_ansi.log").read_text(
        encoding="utf-8"
    )
    line = raw.splitlines()[80]
    assert "\x1b[" in line
    assert clean_line(line) == (
        "INFO 09-10 23:27:29 [pynccl.py:70] vLLM is using nccl==2.26.2 [repeated 3x across cluster]"
    )
    assert clean_line("deepseek-v32-exp  | Exception: boom") == "Exception: boom"
    assert clean_line("deepseek-v32-exp  | ") == ""
    assert clean_line("Dec 04 01:32:11 kamala llama-server[10778]: main: x") == "main: x"
    assert clean_line("2025-01-02T03:04:05.123456789Z INFO ok") == "INFO ok"
    assert clean_line("[rank0]: RuntimeError: x") == "RuntimeError: x"
    # engine prefixes that carry meaning stay
    assert clean_line("[2025-02-07 01:19:40 TP0] Load weight end.") == (
        "[2025-02-07 01:19:40 TP0] Load weight end."
    )


# ---------------------------------------------------------------- log signatures on real logs

#: every real log, with the engine that wrote it and exactly the kinds it must yield
EXPECTED: dict[str, tuple[str, dict[str, int]]] = {
    "nccl_errors/sglang-0.5.8post1_nccl-bootstrap-mismatch-remote-exited.log": (
        "sglang",
        {"nccl_warning": 3, "scheduler_exception": 1, "nccl_error": 1, "child_failed": 1},
    ),
    "nccl_errors/sglang-issue3368_dsr1-2x8-a800_watchdog-allreduce-timeout-after-load.log": (
        "sglang",
        {"nccl_watchdog_timeout": 1},
    ),
    "nccl_errors/vllm-issue16707_ray-init-device-nccl-unhandled-system-error.log": (
        "vllm",
        {"nccl_error": 1},
    ),
    "oom_graph_capture/sglang-issue11218_dsv32-docker-compose-capture-failed-remedies.log": (
        "sglang",
        {"cuda_graph_capture_failed": 1, "scheduler_exception": 1},
    ),
    # the capture traceback is cut before its exception: nothing to claim
    "oom_graph_capture/sglang-issue1751_phi35-capture-cuda-graph-begin-traceback-2024-10.log": (
        "sglang",
        {},
    ),
    "oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log": (
        "sglang",
        {"oom_cuda_graph_capture": 1},
    ),
    "oom_graph_capture/vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log": (
        "vllm",
        {"cuda_oom": 2, "oom_sampler_warmup": 2, "engine_init_failed": 1},
    ),
    "startup/llamacpp-issue10547_journald-server-listening-slot-processing.log": (
        "llamacpp",
        {"ready": 1},
    ),
    "startup/llamacpp-issue15831_b6374-vulkan-server-startup-header.log": (
        "llamacpp",
        {"listening_loading": 1},
    ),
    "startup/llamacpp-issue25121_timestamped-server-ready-and-slot-selection.log": (
        "llamacpp",
        {"ready": 1},
    ),
    # includes ERROR lines "Error retrieving safetensors ... not a safetensors repo": not fatal
    "startup/vllm-0.10.1.1_gpt-oss-120b-ray-tp4_full-startup_ansi.log": ("vllm", {"ready": 1}),
    "startup/vllm-0.10.1.1_qwen2-7b-a100_full-startup_terminal-wrapped.log": (
        "vllm",
        {"ready": 1},
    ),
    "sglang_fp8_default/sglang-0.5.8post1_moe-config-fallback-triton_h100.log": (
        "sglang",
        {"moe_config_fallback": 8, "moe_default_config": 8},
    ),
    "sglang_fp8_default/sglang-pr5675_h20-w8a8-default-single-line.log": (
        "sglang",
        {"fp8_gemm_default_config": 1},
    ),
    "sglang_fp8_default/vllm-benchmarks-deepgemm-readme_h100_w8a8-default-and-using-"
    "configuration.log": ("vllm", {"fp8_gemm_default_config": 2}),
}


def _engine_of(rel: str) -> str:
    name = rel.split("/")[-1]
    if name.startswith("llamacpp"):
        return "llamacpp"
    if name.startswith("vllm") or "vllm" in name.split("_")[0]:
        return "vllm"
    if name.startswith(("tt-inference", "sendnn", "production-stack")):
        return "vllm"
    return "sglang"


ALL_LOGS = sorted(str(p.relative_to(FIX)) for p in FIX.rglob("*.log"))


def test_fixture_set_is_complete() -> None:
    assert len(ALL_LOGS) == 40
    assert set(EXPECTED) <= set(ALL_LOGS)


@pytest.mark.parametrize("rel", ALL_LOGS)
def test_signatures_on_every_real_log(rel: str) -> None:
    """Exactly the expected kinds, and nothing at all in the logs not listed (no false
    positives across the whole fixture set)."""
    engine, want = EXPECTED.get(rel, (_engine_of(rel), {}))
    assert _kinds(rel, engine) == want


@pytest.mark.parametrize("rel", ALL_LOGS)
def test_ready_lines_are_engine_specific(rel: str) -> None:
    own = EXPECTED.get(rel, (_engine_of(rel), {}))[0]
    for other in ENGINES:
        if other != own:
            assert not any(m.ready for m in classify_log(_read(rel), other)), other


def test_match_details_on_real_logs() -> None:
    rel = "oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log"
    (m,) = classify_log(_read(rel), "sglang")
    assert (m.line_no, m.fatal, m.severity) == (18, True, "error")
    assert m.text.startswith("Exception: Capture cuda graph failed: CUDA out of memory")
    assert "--mem-fraction-static" in m.remedy and "--cuda-graph-max-bs" in m.remedy
    assert "--disable-cuda-graph" in m.flags
    # the docker-compose prefix is gone from the reported text
    rel = "oom_graph_capture/sglang-issue11218_dsv32-docker-compose-capture-failed-remedies.log"
    m = classify_log(_read(rel), "sglang")[0]
    assert m.text == "Exception: Capture cuda graph failed:" and m.line_no == 8
    rel = "startup/vllm-0.10.1.1_gpt-oss-120b-ray-tp4_full-startup_ansi.log"
    (ready,) = classify_log(_read(rel), "vllm")
    assert ready.ready and ready.line_no == 329 and not ready.fatal
    assert ready.text == "INFO:     Application startup complete."


def test_primary_failure_prefers_the_root_cause() -> None:
    m = primary_failure(
        classify_log(
            _read(
                "oom_graph_capture/vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log"
            ),
            "vllm",
        )
    )
    assert m is not None and m.kind == "oom_sampler_warmup" and m.line_no == 12
    assert "--max-num-seqs" in m.flags
    m = primary_failure(
        classify_log(
            _read("nccl_errors/sglang-0.5.8post1_nccl-bootstrap-mismatch-remote-exited.log"),
            "sglang",
        )
    )
    assert m is not None and m.kind == "nccl_error" and "remote process exited" in m.text
    m = primary_failure(
        classify_log(
            _read(
                "oom_graph_capture/sglang-issue11218_dsv32-docker-compose-capture-failed-"
                "remedies.log"
            ),
            "sglang",
        )
    )
    assert m is not None and m.kind == "cuda_graph_capture_failed"
    assert primary_failure(classify_log(_read(ALL_LOGS[0]), "sglang")) is None


def test_hard_wrapped_line_is_joined() -> None:
    """A real vLLM line, hard-wrapped by this test inside its signature: the specific
    signature across the wrap beats the general one matching the first half."""
    line = _read(
        "oom_graph_capture/vllm-0.17.1_llama31-8b-rtx3090_sampler-warmup-oom_curated.log"
    ).splitlines()[13]
    cut = line.index("warming up") + 4
    (m,) = classify_log([line[:cut], line[cut:]], "vllm")
    assert m.kind == "oom_sampler_warmup" and m.line_no == 1
    assert "when warming up sampler" in m.text
    # a match entirely inside the second line is reported there, once
    ms = classify_log(["unrelated text", "INFO:     Application startup complete."], "vllm")
    assert [(x.kind, x.line_no) for x in ms] == [("ready", 2)]


# ---------------------------------------------------------------- constructed lines
# Signatures with no real log in the fixture set, checked on single lines written from the
# engine's message format (not real logs).

CONSTRUCTED: list[tuple[str, str, str]] = [
    ("sglang", "[2025-01-01 00:00:00] The server is fired up and ready to roll!", "ready"),
    ("vllm", "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)", "ready"),
    ("vllm", "OSError: [Errno 98] Address already in use", "address_in_use"),
    (
        "sglang",
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
        "address already in use",
        "address_in_use",
    ),
    (
        "vllm",
        "RuntimeError: ... name: EADDRINUSE, message: address already in use",
        "address_in_use",
    ),
    (
        "llamacpp",
        "main: couldn't bind HTTP server socket, hostname: 0.0.0.0, port: 8080",
        "address_in_use",
    ),
    ("sim", "OSError: [Errno 98] Address already in use", "address_in_use"),
    (
        "vllm",
        "OSError: /models/x does not appear to have a file named config.json.",
        "model_not_found",
    ),
    (
        "sglang",
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
        "'namespace/repo_name': '/models/missing'.",
        "model_not_found",
    ),
    (
        "vllm",
        "ValueError: Invalid repository ID or local directory specified: '/m'.",
        "model_not_found",
    ),
    (
        "sglang",
        "FileNotFoundError: [Errno 2] No such file or directory: '/models/x/config.json'",
        "model_not_found",
    ),
    (
        "llamacpp",
        "gguf_init_from_file: failed to open GGUF file '/m.gguf' (No such file or directory)",
        "model_not_found",
    ),
    (
        "vllm",
        "ValueError: User-specified max_model_len (131072) is greater than the derived "
        "max_model_len (max_position_embeddings=32768 or model_max_length=None in model's "
        "config.json).",
        "max_model_len_too_large",
    ),
    (
        "vllm",
        "ValueError: To serve at least one request with the models's max seq len (8192), "
        "(2.00 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(1.00 GiB).",
        "kv_cache_too_small",
    ),
    (
        "sglang",
        "ValueError: Warning: User-specified context_length (65536) is greater than the derived "
        "context_length (32768).",
        "max_model_len_too_large",
    ),
    (
        "sglang",
        "[2025-01-01 00:00:00] Warning: User-specified context_length (65536) is greater than "
        "the derived context_length (32768).",
        "context_length_override",
    ),
    (
        "sglang",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        "not_enough_memory",
    ),
    (
        "sglang",
        "[2026-01-01 00:00:00] Subprocess scheduler_3 (pid=22856) crashed with exit code -6.",
        "child_failed",
    ),
    (
        "llamacpp",
        "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
        "out_of_memory",
    ),
    ("llamacpp", "srv    load_model: failed to load model, '/m.gguf'", "model_load_failed"),
    (
        "llamacpp",
        "srv load_model: the slot context (8192) exceeds the training context of the model "
        "(4096) - capping",
        "ctx_exceeds_training",
    ),
    ("sim", "inferlab sim (SIMULATED engine) listening on http://127.0.0.1:8000", "ready"),
]


@pytest.mark.parametrize(("engine", "line", "kind"), CONSTRUCTED)
def test_constructed_lines(engine: str, line: str, kind: str) -> None:
    assert [m.kind for m in classify_log([line], engine)] == [kind]


@pytest.mark.parametrize(
    ("engine", "line"),
    [
        # a shared-library "No such file or directory" is not a missing model
        (
            "vllm",
            "WARNING _custom_ops.py:18] Failed to import from vllm._C with ImportError("
            "'libcuda.so.1: cannot open shared object file: No such file or directory')",
        ),
        # traceback source lines quoting the messages
        ("vllm", '    raise RuntimeError(f"NCCL error: {error_str}")'),
        ("sglang", '                f"Capture cuda graph failed: {e}\\n"'),
        # SGLang's remedy list and uvicorn's start are not failures / not ready for SGLang
        ("sglang", "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)"),
        ("sglang", "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"),
        ("vllm", "INFO [utils.py:326] non-default args: {'max_model_len': 16384}"),
        ("llamacpp", "main: HTTP server is listening, hostname: 0.0.0.0, port: 8080"),
    ],
)
def test_constructed_near_misses(engine: str, line: str) -> None:
    ms = classify_log([line], engine)
    assert not any(m.fatal or m.ready for m in ms), ms


# ---------------------------------------------------------------- vLLM-CPU logs (optional)


@pytest.mark.skipif(not VLLM_CPU.is_dir(), reason="no tests/fixtures/vllm_cpu/ logs yet")
def test_vllm_cpu_logs() -> None:
    logs = sorted(p for p in VLLM_CPU.rglob("*") if p.suffix in {".log", ".txt"})
    if not logs:
        pytest.skip("no vLLM-CPU log files")
    for path in logs:
        ms = classify_log(path.read_text(encoding="utf-8", errors="replace"), "vllm")
        # a log either reached readiness or names its failure; never both ready and fatal-first
        fatal = primary_failure(ms)
        ready = [m for m in ms if m.ready]
        assert ready or fatal is not None or "fail" not in path.name, path.name
        if fatal is not None and ready:
            assert fatal.line_no > ready[0].line_no, path.name
