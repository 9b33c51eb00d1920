"""Engine knowledge (inferlab.engines): the registry, each spec's consistency, request fields,
paths, launch argv and its refusals, GPUs per config from the parallel flags. Flags, metrics
and log signatures: test_flags.py, test_prometheus.py, test_logs.py."""

from __future__ import annotations

import pytest

import inferlab.engines as engines
from inferlab.engines import (
    classify_log,
    get_engine,
    is_simulated,
    registered,
)
from inferlab.errors import ConfigError

ENGINES = ["command", "llamacpp", "openai", "sglang", "sim", "transformers", "vllm"]


# ---------------------------------------------------------------- registry


def test_public_api_is_pinned() -> None:
    assert sorted(engines.__all__) == sorted(
        [
            "Change",
            "EngineSpec",
            "FlagSyntax",
            "Fp8Tuning",
            "Launcher",
            "LogFacts",
            "LogMatch",
            "LogSignature",
            "MetricDef",
            "NativeApi",
            "OomAdvice",
            "ParsedArgs",
            "ReconFacts",
            "Sample",
            "classify_log",
            "clean_line",
            "get_engine",
            "histogram_buckets",
            "is_simulated",
            "parse_prometheus",
            "primary_failure",
            "register",
            "registered",
            "specs",
            "unregister",
        ]
    )


def test_only_the_reference_engine_is_simulated() -> None:
    assert [e for e in ENGINES if is_simulated(e)] == ["sim"]
    # a run's stored engine_name may be missing or from an engine this version lacks
    assert not is_simulated(None) and not is_simulated("tgi") and not is_simulated("")


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


# --- GPUs per config, from the engines' parallel flags


@pytest.mark.parametrize(
    ("engine", "args", "gpus"),
    [
        ("sglang", [], 1),
        ("sglang", ["--tp", "4"], 4),
        ("sglang", ["--tp-size", "4", "--pp-size", "2", "--dp", "2"], 16),
        ("sglang", ["--tp", "8", "--dp", "8", "--enable-dp-attention"], 8),
        ("vllm", ["-tp", "2", "--pipeline-parallel-size", "2"], 4),
        ("vllm", ["--tensor_parallel_size", "8"], 8),
        ("sim", ["--itl-ms", "4"], 0),
    ],
)
def test_gpus_from_the_engines_parallel_flags(engine: str, args: list[str], gpus: int) -> None:
    assert get_engine(engine).gpus_needed(args) == gpus


def test_a_bad_parallel_value_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"--tp-size needs a positive integer.*'x'"):
        get_engine("sglang").gpus_needed(["--tp", "x"])
