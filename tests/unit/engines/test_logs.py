"""Engine log signatures (``engines.logs``) on every real log of tests/fixtures/engine_logs/
(see SOURCES.md there) and on constructed lines where no real log has the message."""

from __future__ import annotations

from collections import Counter

import pytest

from inferlab.engines import (
    classify_log,
    clean_line,
    primary_failure,
)
from support import FIXTURES

FIX = FIXTURES / "engine_logs"
VLLM_CPU = FIXTURES / "vllm_cpu"
ENGINES = ["command", "llamacpp", "openai", "sglang", "sim", "transformers", "vllm"]


def _read(rel: str) -> str:
    return (FIX / rel).read_text(encoding="utf-8")


def _kinds(rel: str, engine: str) -> dict[str, int]:
    return dict(Counter(m.kind for m in classify_log(_read(rel), engine)))


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
    # SGLang 0.5.17 on an H100 under inferlab (2026-12-07): the child_failed line is the
    # scheduler obeying the stop (EngineSpec.before_stop; tests/unit/engines/test_sglang_h100_logs)
    "sglang_h100/baseline-0.5.17-h100.log": (
        "sglang",
        {"fp8_gemm_default_config": 4, "ready": 1, "child_failed": 1},
    ),
    "sglang_h100/A-tuned-0.5.17-h100-excerpt.log": ("sglang", {"ready": 1, "child_failed": 1}),
    # part 2 (2026-12-07): --mem-fraction-static 0.998 fails in cuBLAS before any capture; the
    # scheduler's exception and the child's crash follow from it (engines.logs.primary_failure)
    "sglang_h100/graph-oom-0.998-0.5.17-h100.log": (
        "sglang",
        {"cublas_alloc_failed": 1, "scheduler_exception": 1, "child_failed": 1},
    ),
    "sglang_h100/graph-oom-fix-0.89-0.5.17-h100-excerpt.log": (
        "sglang",
        {"fp8_gemm_default_config": 4},
    ),
    "sglang_h100/ngram-launch2-0.5.17-h100-excerpt.log": (
        "sglang",
        {"fp8_gemm_default_config": 4, "ready": 1},
    ),
}


#: logs whose ready lines are uvicorn's own ("Application startup complete", "Uvicorn running
#: on"), which vLLM's and transformers' ready signatures also match: the same words in every
#: uvicorn server's log (the engine is told apart by its other lines, ``logs.analyze``)
UVICORN_READY = {
    "sglang_h100/baseline-0.5.17-h100.log": ("vllm", "transformers"),
    "sglang_h100/A-tuned-0.5.17-h100-excerpt.log": ("vllm", "transformers"),
    "sglang_h100/graph-oom-fix-0.89-0.5.17-h100-excerpt.log": ("vllm", "transformers"),
    "sglang_h100/ngram-launch2-0.5.17-h100-excerpt.log": ("vllm", "transformers"),
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
    assert len(ALL_LOGS) == 45
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
        if other != own and other not in UVICORN_READY.get(rel, ()):
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


def test_a_refusal_names_the_flags_involved_and_a_crash_names_none() -> None:
    """A refusal (the engine refused the config as it read it) names its flags, so a search
    does not launch the same values again (``search.refusals``); an OOM, whose cause is not
    just the flags its remedy turns, names none."""
    cause = primary_failure(
        classify_log((VLLM_CPU / "startup_fail_batched_tokens.log").read_text(), "vllm")
    )
    assert cause is not None and cause.kind == "batched_tokens_below_model_len"
    assert cause.involved() == (
        "--max-num-batched-tokens", "--max-model-len", "--no-enable-chunked-prefill"
    )  # fmt: skip
    fp8 = primary_failure(
        classify_log((VLLM_CPU / "startup_fail_fp8_kv_no_avx512.log").read_text(), "vllm")
    )
    assert fp8 is not None and fp8.involved() == ("--kv-cache-dtype",)
    sim = primary_failure(
        classify_log("Error: invalid sim option --jitter-ms: Input should be >= 0", "sim")
    )
    assert sim is not None and sim.involved() == ("--jitter-ms",)
    oom = primary_failure(
        classify_log(
            _read("oom_graph_capture/sglang-issue5285_deepep-h20-capture-oom-traceback.log"),
            "sglang",
        )
    )
    assert oom is not None and oom.flags and oom.involved() == ()
